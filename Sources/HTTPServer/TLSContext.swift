internal import CLibEvent
internal import Glibc
internal import Synchronization

/// The server's OpenSSL `SSL_CTX`: built once by `HTTPServer.start()` from a
/// `TLSConfiguration`, shared (read-only) by every loop thread, freed when the last loop lets
/// go of it. Each connection gets its own `SSL` from it; an `SSL` holds its own reference to
/// the `SSL_CTX`, so a connection never outlives the context it uses.
final class TLSContext: @unchecked Sendable {
    // @unchecked: after `init` the SSL_CTX is only read (SSL_new, which OpenSSL locks
    // internally); `requiresClientCertificate` is a constant.

    private let context: OpaquePointer
    /// Whether clients must present a certificate (`clientCAPath` was set).
    let requiresClientCertificate: Bool

    /// Loads the certificate chain, the key and the client CAs; throws `.tls` errors naming
    /// the file and OpenSSL's reason.
    init(_ configuration: TLSConfiguration) throws(HTTPServerError) {
        ERR_clear_error()
        guard let context = SSL_CTX_new(TLS_server_method()) else {
            throw HTTPServerError(.tls, "could not create a TLS context: \(Self.drainErrors())")
        }
        self.context = context
        requiresClientCertificate = configuration.clientCAPath != nil
        do throws(HTTPServerError) {
            try configure(configuration)
        } catch {
            ERR_clear_error()
            throw error  // deinit frees the context
        }
    }

    deinit {
        SSL_CTX_free(context)
    }

    private func configure(_ configuration: TLSConfiguration) throws(HTTPServerError) {
        // Before loading anything, so that weak keys and signatures are refused at start.
        SSL_CTX_set_security_level(context, 2)
        let minimum = configuration.minimumVersion == .v1_3 ? TLS1_3_VERSION : TLS1_2_VERSION
        guard insightd_ssl_ctx_set_min_proto_version(context, minimum) == 1 else {
            throw HTTPServerError(.tls, "could not set the lowest TLS version: \(Self.drainErrors())")
        }
        insightd_ssl_ctx_set_server_options(context)
        guard SSL_CTX_set_cipher_list(context, configuration.tls12Ciphers) == 1 else {
            throw HTTPServerError(
                .tls, "TLS 1.2 cipher list \"\(configuration.tls12Ciphers)\": \(Self.drainErrors())")
        }
        // A key that turns out to be encrypted fails instead of prompting on the terminal.
        SSL_CTX_set_default_passwd_cb(context) { _, _, _, _ in 0 }
        insightd_ssl_ctx_select_http11_alpn(context)
        // Resumed sessions are tied to this server (OpenSSL refuses to resume without it when
        // client certificates are verified).
        let sessionContext: StaticString = "insightd"
        _ = SSL_CTX_set_session_id_context(
            context, sessionContext.utf8Start, UInt32(sessionContext.utf8CodeUnitCount))

        let certificate = configuration.certificatePath
        let key = configuration.privateKeyPath
        try Self.checkReadable(certificate, role: "certificate")
        guard SSL_CTX_use_certificate_chain_file(context, certificate) == 1 else {
            throw HTTPServerError(.tls, "TLS certificate \(certificate): \(Self.drainErrors())")
        }
        try Self.checkReadable(key, role: "private key")
        guard SSL_CTX_use_PrivateKey_file(context, key, SSL_FILETYPE_PEM) == 1 else {
            let errors = Self.errorQueue()
            if errors.contains(where: Self.isKeyMismatch) {
                throw HTTPServerError(
                    .tls,
                    "TLS private key \(key) does not match the certificate \(certificate): "
                        + Self.describe(errors))
            }
            var reason = Self.describe(errors)
            if reason.contains("decrypt") || reason.contains("password") {
                reason += " (the key must not be encrypted)"
            }
            throw HTTPServerError(.tls, "TLS private key \(key): \(reason)")
        }
        // A key of another type than the certificate's is stored beside it, not checked: only
        // this finds it (OpenSSL then says "no certificate assigned", which would mislead).
        guard SSL_CTX_check_private_key(context) == 1 else {
            ERR_clear_error()
            throw HTTPServerError(
                .tls,
                "TLS private key \(key) does not match the certificate \(certificate): "
                    + "the key is of another type than the certificate's")
        }

        if let clientCA = configuration.clientCAPath {
            try Self.checkReadable(clientCA, role: "client CA file")
            guard SSL_CTX_load_verify_file(context, clientCA) == 1 else {
                throw HTTPServerError(.tls, "TLS client CA file \(clientCA): \(Self.drainErrors())")
            }
            // The CA names sent in the CertificateRequest, so clients pick a fitting certificate.
            guard let names = SSL_load_client_CA_file(clientCA) else {
                throw HTTPServerError(
                    .tls, "TLS client CA file \(clientCA): no CA certificate in it (\(Self.drainErrors()))")
            }
            SSL_CTX_set_client_CA_list(context, names)
            SSL_CTX_set_verify(context, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nil)
        } else {
            SSL_CTX_set_verify(context, SSL_VERIFY_NONE, nil)
        }
        ERR_clear_error()
    }

    /// A server-side TLS bufferevent on an accepted socket, which it owns from here on (it is
    /// closed with the bufferevent); nil if OpenSSL or libevent failed, the socket then closed.
    func makeBufferevent(base: OpaquePointer, socket: Int32) -> OpaquePointer? {
        guard let ssl = SSL_new(context) else {
            ERR_clear_error()
            close(socket)
            return nil
        }
        guard
            let bufferevent = bufferevent_openssl_socket_new(
                base, socket, ssl, BUFFEREVENT_SSL_ACCEPTING, Int32(BEV_OPT_CLOSE_ON_FREE.rawValue))
        else {
            // libevent 2.1 frees the SSL and closes the socket itself when it fails after taking
            // them, and frees neither when it could not allocate at all; it cannot say which.
            // Touching neither risks a leak on an out-of-memory path instead of a double free.
            ERR_clear_error()
            return nil
        }
        // A TCP close without close_notify is the end of the stream, not an error.
        bufferevent_openssl_set_allow_dirty_shutdown(bufferevent, 1)
        return bufferevent
    }

    // MARK: - Connections

    /// The verified client certificate's subject (RFC 2253, e.g. `CN=svc,O=Acme`) of a
    /// connection whose handshake completed, when client certificates are required.
    func peerSubject(of bufferevent: OpaquePointer) -> String? {
        guard requiresClientCertificate,
            let ssl = bufferevent_openssl_get_ssl(bufferevent),
            SSL_get_verify_result(ssl) == Int(X509_V_OK),
            let certificate = SSL_get0_peer_certificate(ssl),
            let name = X509_get_subject_name(certificate),
            let bio = BIO_new(BIO_s_mem())
        else { return nil }
        defer { BIO_free(bio) }
        guard X509_NAME_print_ex(bio, name, 0, insightd_x509_name_flags_rfc2253()) >= 0 else {
            ERR_clear_error()
            return nil
        }
        let length = Int(BIO_ctrl_pending(bio))
        return String(unsafeUninitializedCapacity: length) { buffer in
            Int(max(BIO_read(bio, buffer.baseAddress, Int32(length)), 0))
        }
    }

    /// Sends close_notify on a connection whose handshake completed, best effort: the socket
    /// is non-blocking, and a peer that is gone makes it fail harmlessly.
    static func sendCloseNotify(_ bufferevent: OpaquePointer) {
        guard let ssl = bufferevent_openssl_get_ssl(bufferevent), SSL_is_init_finished(ssl) == 1 else { return }
        _ = SSL_shutdown(ssl)
        ERR_clear_error()
    }

    // MARK: - Errors

    private static func checkReadable(_ path: String, role: String) throws(HTTPServerError) {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else {
            throw HTTPServerError(.tls, "TLS \(role) \(path): \(String(cString: strerror(errno)))")
        }
        defer { close(descriptor) }
        var status = stat()
        if fstat(descriptor, &status) == 0 && status.st_mode & S_IFMT == S_IFDIR {
            throw HTTPServerError(.tls, "TLS \(role) \(path): \(String(cString: strerror(EISDIR)))")
        }
    }

    private static func errorQueue() -> [UInt] {
        var codes: [UInt] = []
        while true {
            let code = ERR_get_error()
            if code == 0 { return codes }
            codes.append(code)
        }
    }

    private static func isKeyMismatch(_ code: UInt) -> Bool {
        ERR_GET_LIB(code) == ERR_LIB_X509
            && (ERR_GET_REASON(code) == X509_R_KEY_VALUES_MISMATCH || ERR_GET_REASON(code) == X509_R_KEY_TYPE_MISMATCH)
    }

    /// OpenSSL's reasons for the errors queued on this thread, which it empties.
    static func drainErrors() -> String {
        describe(errorQueue())
    }

    private static func describe(_ codes: [UInt]) -> String {
        var reasons: [String] = []
        for code in codes {
            let reason: String
            if let text = ERR_reason_error_string(code) {
                reason = String(cString: text)
            } else {
                reason = withUnsafeTemporaryAllocation(of: CChar.self, capacity: 256) { buffer in
                    ERR_error_string_n(code, buffer.baseAddress, buffer.count)
                    return String(cString: buffer.baseAddress!)
                }
            }
            if !reasons.contains(reason) { reasons.append(reason) }
        }
        return reasons.isEmpty ? "unknown OpenSSL error" : reasons.joined(separator: ": ")
    }
}

/// The TLS context new connections are made from, replaceable while the server runs (a renewed
/// certificate is loaded without a restart). Connections made before keep the context they were
/// made from: each `SSL` holds its own reference to its `SSL_CTX`.
final class TLSContextSlot: Sendable {
    private let current: Mutex<TLSContext>

    init(_ context: TLSContext) { current = Mutex(context) }

    /// The context for a connection accepted now.
    var context: TLSContext { current.withLock { $0 } }

    /// New connections use `context` from now on.
    func replace(with context: TLSContext) { current.withLock { $0 = context } }
}
