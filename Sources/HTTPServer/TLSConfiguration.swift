/// TLS settings of an `HTTPServer` (see `HTTPServerConfiguration.tls`).
///
/// Files are PEM and are read once, by `HTTPServer.start()`; a missing, unreadable or
/// mismatched file makes `start()` throw an `HTTPServerError` of kind `.tls` that names the
/// file and OpenSSL's reason. TLS 1.2 is the lowest version ever accepted, at OpenSSL
/// security level 2 (keys of at least 112-bit strength, no SHA-1 signatures). ALPN selects
/// `http/1.1` when the client offers it. The handshake must finish within
/// `HTTPServerConfiguration.requestTimeout` seconds.
public struct TLSConfiguration: Sendable, Equatable {
    /// The lowest TLS version a client may use.
    public enum Version: Sendable, Equatable {
        case v1_2, v1_3
    }

    /// The server certificate, followed by any intermediate CA certificates.
    public var certificatePath: String
    /// The private key of the certificate (not encrypted: there is no one to ask for a
    /// passphrase).
    public var privateKeyPath: String
    /// When set, client-certificate authentication: the CA certificates (PEM, one or more) a
    /// client certificate must chain to. Every client must then present such a certificate or
    /// the handshake fails; the verified subject reaches the handler as
    /// `HTTPRequest.tlsPeerSubject`.
    public var clientCAPath: String?
    /// The lowest version accepted; never below TLS 1.2.
    public var minimumVersion: Version = .v1_2
    /// The TLS 1.2 cipher list in OpenSSL's syntax (TLS 1.3 suites are OpenSSL's defaults, all
    /// AEAD). The default allows only forward-secret AEAD suites.
    public var tls12Ciphers: String = TLSConfiguration.defaultTLS12Ciphers

    /// ECDHE key exchange with AES-GCM or ChaCha20-Poly1305 (Mozilla's "intermediate" list
    /// without finite-field DHE).
    public static let defaultTLS12Ciphers =
        "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:"
        + "ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:"
        + "ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305"

    public init(certificatePath: String, privateKeyPath: String, clientCAPath: String? = nil) {
        self.certificatePath = certificatePath
        self.privateKeyPath = privateKeyPath
        self.clientCAPath = clientCAPath
    }

    /// Why the settings cannot be used, or nil when they can (files are checked at start).
    func validationError() -> String? {
        if certificatePath.isEmpty { return "tls.certificatePath must not be empty" }
        if privateKeyPath.isEmpty { return "tls.privateKeyPath must not be empty" }
        if clientCAPath?.isEmpty == true { return "tls.clientCAPath must not be empty when set" }
        if tls12Ciphers.isEmpty { return "tls.tls12Ciphers must not be empty" }
        return nil
    }
}
