// Test-only TLS plumbing: certificates made at run time with the `openssl` tool, and a blocking
// TLS client on OpenSSL's C API (reached through CLibEvent, which carries the OpenSSL headers
// for HTTPServer) that `TestClient` speaks through. Importing Foundation, Glibc and the C
// module together here also keeps the _GNU_SOURCE clash covered with OpenSSL in the module.
internal import CLibEvent
import Foundation
import Glibc
import XCTest

/// A throw-away PKI: a CA, a server certificate for localhost and 127.0.0.1, a client
/// certificate from the CA, and a client certificate from an unrelated CA.
struct TestPKI: Sendable {
    let directory: String

    var caCertificate: String { directory + "/ca.pem" }
    var serverCertificate: String { directory + "/server.pem" }
    var serverKey: String { directory + "/server.key" }
    var clientCertificate: String { directory + "/client.pem" }
    var clientKey: String { directory + "/client.key" }
    var rogueCACertificate: String { directory + "/rogue-ca.pem" }
    var rogueClientCertificate: String { directory + "/rogue-client.pem" }
    var rogueClientKey: String { directory + "/rogue-client.key" }
    /// A second server certificate from the same CA (organisation "Renewed"), for reloads.
    var renewedServerCertificate: String { directory + "/server-renewed.pem" }
    var renewedServerKey: String { directory + "/server-renewed.key" }

    /// The client certificate's subject as the server reports it (RFC 2253: last RDN first).
    static let clientSubject = "CN=checkout-service,O=Acme Payments"

    /// The PKI of this test process, made on first use; XCTSkip when `openssl` is missing.
    static func shared() throws -> TestPKI {
        try sharedPKI.get()
    }

    private static let sharedPKI: Result<TestPKI, TestClientError> = Result { () throws(TestClientError) in
        try generate()
    }

    /// Removes the files; called once the TLS tests are done.
    static func removeShared() {
        if case .success(let pki) = sharedPKI { try? FileManager.default.removeItem(atPath: pki.directory) }
    }

    private static let extensions = """
        [req]
        distinguished_name = dn
        prompt = no
        [dn]
        CN = unused
        [ca]
        basicConstraints = critical,CA:TRUE
        keyUsage = critical,keyCertSign,cRLSign
        subjectKeyIdentifier = hash
        [server]
        basicConstraints = critical,CA:FALSE
        keyUsage = critical,digitalSignature
        extendedKeyUsage = serverAuth
        subjectAltName = DNS:localhost,IP:127.0.0.1
        authorityKeyIdentifier = keyid
        [client]
        basicConstraints = critical,CA:FALSE
        keyUsage = critical,digitalSignature
        extendedKeyUsage = clientAuth
        authorityKeyIdentifier = keyid

        """

    private static func generate() throws(TestClientError) -> TestPKI {
        guard let openssl = findExecutable("openssl") else {
            throw TestClientError(description: "the openssl command-line tool is not installed")
        }
        let directory = NSTemporaryDirectory() + "insightd-tls-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            try extensions.write(toFile: directory + "/openssl.cnf", atomically: false, encoding: .utf8)
        } catch {
            throw TestClientError(description: "could not write \(directory): \(error)")
        }
        let pki = TestPKI(directory: directory)
        let newKey = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
        func run(_ arguments: [String]) throws(TestClientError) {
            let result = runProcess(openssl, arguments, directory: directory)
            guard result.status == 0 else {
                throw TestClientError(description: "openssl \(arguments.joined(separator: " ")): \(result.output)")
            }
        }
        for (name, subject) in [("ca", "/CN=insightd test CA"), ("rogue-ca", "/CN=rogue CA")] {
            try run(
                ["req", "-x509", "-config", "openssl.cnf", "-extensions", "ca"] + newKey
                    + ["-keyout", "\(name).key", "-out", "\(name).pem", "-days", "2", "-subj", subject])
        }
        for (name, ca, section, subject) in [
            ("server", "ca", "server", "/CN=localhost"),
            ("server-renewed", "ca", "server", "/O=Renewed/CN=localhost"),
            ("client", "ca", "client", "/O=Acme Payments/CN=checkout-service"),
            ("rogue-client", "rogue-ca", "client", "/O=Acme Payments/CN=checkout-service")
        ] {
            try run(
                ["req", "-new", "-config", "openssl.cnf"] + newKey
                    + ["-keyout", "\(name).key", "-out", "\(name).csr", "-subj", subject])
            try run([
                "x509", "-req", "-in", "\(name).csr", "-CA", "\(ca).pem", "-CAkey", "\(ca).key",
                "-set_serial", String(UInt32.random(in: 1...UInt32.max)), "-days", "2",
                "-extfile", "openssl.cnf", "-extensions", section, "-out", "\(name).pem"
            ])
        }
        return pki
    }
}

func findExecutable(_ name: String) -> String? {
    let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
    return path.split(separator: ":").map { "\($0)/\(name)" }.first { access($0, X_OK) == 0 }
}

/// Runs a program to completion; its exit status and its stdout and stderr together.
func runProcess(_ executable: String, _ arguments: [String], directory: String? = nil) -> (status: Int32, output: String) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    if let directory { process.currentDirectoryURL = URL(fileURLWithPath: directory) }
    let pipe = Pipe()
    process.standardOutput = pipe
    process.standardError = pipe
    do {
        try process.run()
    } catch {
        return (-1, "\(error)")
    }
    let data = pipe.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return (process.terminationStatus, String(decoding: data, as: UTF8.self))
}

/// How a test TLS client connects.
struct TLSClientSettings {
    enum Version {
        case tls1_0, tls1_1, tls1_2, tls1_3

        fileprivate var code: Int32 {
            switch self {
            case .tls1_0: TLS1_VERSION
            case .tls1_1: TLS1_1_VERSION
            case .tls1_2: TLS1_2_VERSION
            case .tls1_3: TLS1_3_VERSION
            }
        }
    }

    /// Verifies the server's certificate against this CA (and its IP SAN 127.0.0.1).
    var caPath: String?
    var certificatePath: String?
    var keyPath: String?
    var minimumVersion: Version?
    var maximumVersion: Version?
    /// Security level 0 and every cipher, so that the client can offer TLS 1.0/1.1 at all.
    var legacy = false
    var alpn: [String] = []

    static func trusting(_ pki: TestPKI) -> TLSClientSettings {
        TLSClientSettings(caPath: pki.caCertificate)
    }

    func presenting(certificate: String, key: String) -> TLSClientSettings {
        var settings = self
        settings.certificatePath = certificate
        settings.keyPath = key
        return settings
    }
}

/// One client TLS session over a connected blocking socket (which the caller closes).
final class TLSClientSession {
    private let context: OpaquePointer
    private let ssl: OpaquePointer
    /// The server ended the stream with close_notify (rather than just closing TCP).
    private(set) var receivedCloseNotify = false

    /// Handshakes; throws with OpenSSL's reasons when the server (or the client) refuses.
    init(socket: Int32, settings: TLSClientSettings) throws {
        ERR_clear_error()
        guard let context = SSL_CTX_new(TLS_client_method()) else { throw Self.failure("SSL_CTX_new") }
        self.context = context
        guard let ssl = SSL_new(Self.configure(context, settings)) else {
            SSL_CTX_free(context)
            throw Self.failure("SSL_new")
        }
        self.ssl = ssl
        SSL_set_fd(ssl, socket)
        if settings.caPath != nil {
            X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), "127.0.0.1")
        }
        guard SSL_connect(ssl) == 1 else { throw Self.failure("handshake") }
    }

    private static func configure(_ context: OpaquePointer, _ settings: TLSClientSettings) -> OpaquePointer {
        if settings.legacy {
            SSL_CTX_set_security_level(context, 0)
            SSL_CTX_set_cipher_list(context, "ALL:@SECLEVEL=0")
        }
        // Set both bounds: the system's openssl.cnf may impose its own minimum.
        let minimum = settings.minimumVersion ?? (settings.legacy ? .tls1_0 : .tls1_2)
        insightd_ssl_ctx_set_min_proto_version(context, minimum.code)
        insightd_ssl_ctx_set_max_proto_version(context, settings.maximumVersion?.code ?? 0)
        if let ca = settings.caPath {
            SSL_CTX_load_verify_file(context, ca)
            SSL_CTX_set_verify(context, SSL_VERIFY_PEER, nil)
        }
        if let certificate = settings.certificatePath, let key = settings.keyPath {
            SSL_CTX_use_certificate_chain_file(context, certificate)
            SSL_CTX_use_PrivateKey_file(context, key, SSL_FILETYPE_PEM)
        }
        if !settings.alpn.isEmpty {
            let wire = settings.alpn.flatMap { [UInt8($0.utf8.count)] + Array($0.utf8) }
            SSL_CTX_set_alpn_protos(context, wire, UInt32(wire.count))
        }
        return context
    }

    deinit {
        SSL_free(ssl)
        SSL_CTX_free(context)
    }

    /// The negotiated protocol, e.g. "TLSv1.3".
    var version: String { String(cString: SSL_get_version(ssl)) }

    /// The server certificate's subject, in OpenSSL's one-line form ("/O=Renewed/CN=localhost").
    var peerSubject: String? {
        guard let certificate = SSL_get1_peer_certificate(ssl) else { return nil }
        defer { X509_free(certificate) }
        var buffer = [CChar](repeating: 0, count: 256)
        guard X509_NAME_oneline(X509_get_subject_name(certificate), &buffer, Int32(buffer.count)) != nil else { return nil }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// The protocol the server selected by ALPN, or nil.
    var alpnProtocol: String? {
        var data: UnsafePointer<UInt8>?
        var length: UInt32 = 0
        SSL_get0_alpn_selected(ssl, &data, &length)
        guard let data, length > 0 else { return nil }
        return String(decoding: UnsafeBufferPointer(start: data, count: Int(length)), as: UTF8.self)
    }

    /// Sends close_notify: the client is done writing; it can still read.
    func sendCloseNotify() {
        _ = SSL_shutdown(ssl)
        ERR_clear_error()
    }

    func write(_ bytes: UnsafeRawBufferPointer) throws {
        var sent = 0
        while sent < bytes.count {
            let count = SSL_write(ssl, bytes.baseAddress! + sent, Int32(bytes.count - sent))
            guard count > 0 else { throw Self.failure("write", ssl: ssl, result: count) }
            sent += Int(count)
        }
    }

    /// Reads plaintext; 0 at the end of the stream (close_notify, TCP end or reset).
    func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        let count = SSL_read(ssl, buffer.baseAddress, Int32(buffer.count))
        if count > 0 { return Int(count) }
        let error = SSL_get_error(ssl, count)
        let systemError = errno
        switch error {
        case SSL_ERROR_ZERO_RETURN:
            receivedCloseNotify = true
            return 0
        case SSL_ERROR_SYSCALL where systemError == ECONNRESET || systemError == EPIPE || count == 0:
            ERR_clear_error()
            return 0
        case SSL_ERROR_SSL where ERR_GET_REASON(ERR_peek_error()) == SSL_R_UNEXPECTED_EOF_WHILE_READING:
            ERR_clear_error()
            return 0
        case SSL_ERROR_WANT_READ:
            throw TestClientError(description: "TLS read timed out")
        default:
            throw Self.failure("read", ssl: ssl, result: count)
        }
    }

    private static func failure(_ step: String, ssl: OpaquePointer? = nil, result: Int32 = 0) -> TestClientError {
        var reasons: [String] = []
        while true {
            let code = ERR_get_error()
            if code == 0 { break }
            reasons.append(ERR_reason_error_string(code).map { String(cString: $0) } ?? "error \(code)")
        }
        if reasons.isEmpty, let ssl {
            reasons.append("SSL error \(SSL_get_error(ssl, result)), errno \(String(cString: strerror(errno)))")
        }
        return TestClientError(description: "TLS \(step) failed: \(reasons.joined(separator: ": "))")
    }
}
