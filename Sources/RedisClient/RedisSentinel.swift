/// Asking Redis Sentinel where the master is, as Sentinel's client guidelines describe: each
/// sentinel in turn is asked `SENTINEL get-master-addr-by-name`, the first that knows the master
/// answers, and the server it names is checked with `ROLE` before it is used (it may have been
/// demoted since, and a sentinel cut off from the others may still name the old master).
extension RedisSentinelURL {
    /// Asks the sentinels, starting with `first` and going round, where the master is; returns
    /// its URL (with the master's credentials) and the sentinel that answered (to ask first next
    /// time). Throws `unknownMaster` when the sentinels that answered all know no master of that
    /// name, and `noSentinel` (every sentinel's reason) when none answered.
    public func locateMaster(first: Int = 0, connectTimeout: Duration, commandTimeout: Duration)
        throws(RedisError) -> (master: RedisURL, sentinel: Int)
    {
        var reasons: [String] = []
        var unknown = false
        for step in 0..<sentinels.count {
            let index = (first + step) % sentinels.count
            do throws(RedisError) {
                let connection = try RedisConnection(
                    url: sentinel(index), connectTimeout: connectTimeout,
                    commandTimeout: commandTimeout)
                let reply = try connection.command("SENTINEL", "get-master-addr-by-name", RedisArgument(masterName))
                guard let address = try Self.masterAddress(in: reply) else {
                    unknown = true
                    continue
                }
                return (master(at: address), index)
            } catch {
                reasons.append("\(sentinels[index]): \(error)")
            }
        }
        if unknown { throw .unknownMaster(masterName) }
        throw .noSentinel(reasons.joined(separator: "; "))
    }

    /// The address in a reply of `SENTINEL get-master-addr-by-name`: `[host, port]`, or the null
    /// reply when the sentinel monitors no master of that name (nil).
    public static func masterAddress(in reply: RedisReply) throws(RedisError) -> RedisAddress? {
        if reply.isNull { return nil }
        guard let parts = reply.elements, parts.count == 2, let host = parts[0].string, !host.isEmpty,
            let portText = parts[1].string, let port = Int(portText), (1...65535).contains(port)
        else {
            throw .protocolError("SENTINEL get-master-addr-by-name did not answer [host, port]")
        }
        return RedisAddress(host: host, port: port)
    }
}

extension RedisConnection {
    /// Whether the server is a master now (`ROLE`); throws `notMaster` when it is a replica or a
    /// sentinel, which is what a server named before a failover may have become.
    public func requireMaster() throws(RedisError) {
        let reply = try command("ROLE")
        guard try Self.isMasterRole(reply) else {
            throw .notMaster("\(RedisAddress(host: url.host, port: url.port))")
        }
    }

    /// Whether a reply of `ROLE` says master (`["master", offset, replicas]`); the other roles
    /// are `slave` and `sentinel`.
    public static func isMasterRole(_ reply: RedisReply) throws(RedisError) -> Bool {
        guard let role = reply.elements?.first?.string else {
            throw .protocolError("ROLE did not answer [role, …]")
        }
        return role == "master"
    }
}
