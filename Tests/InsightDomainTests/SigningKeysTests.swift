import Crypto
import InsightDomain
import InsightTesting
import XCTest

/// Which key signs and which are published, as time passes — and when the wall clock steps back.
final class SigningKeysTests: XCTestCase {
    let t0: Milliseconds = 1_800_000_000_000

    func key(created: Milliseconds, activates: Milliseconds, retired: Milliseconds? = nil, until: Milliseconds? = nil) -> SigningKey {
        SigningKey(
            key: Ed25519SigningKey.generate().key, createdAt: created, activatesAt: activates, retiredAt: retired,
            publishedUntil: until)
    }

    func kid(of signature: String?) throws -> String {
        let header = try XCTUnwrap(Base64URL.decode(try XCTUnwrap(signature).prefix { $0 != "." }))
        return String(String(decoding: header, as: UTF8.self).dropFirst(#"{"alg":"EdDSA","kid":""#.count).dropLast(2))
    }

    func testTheCurrentKeyFollowsActivationAndSignaturesFollowIt() throws {
        let first = key(created: t0, activates: t0)
        let second = key(created: t0 + 1000, activates: t0 + 300_000)
        let clock = ManualClock(t0 + 1000)
        let keys = SigningKeys(try SigningKeySet(keys: [second, first], now: clock.now()), clock: clock)
        XCTAssertEqual(keys.set.keys.map(\.keyId), [first.keyId, second.keyId], "oldest first")
        XCTAssertEqual(try kid(of: keys.sign([1, 2, 3])), first.keyId)
        XCTAssertEqual(keys.published().map(\.keyId), [first.keyId, second.keyId], "published before it signs")
        XCTAssertEqual(keys.set.status(of: second, at: clock.now()), .next)
        clock.advance(ms: 299_000)
        XCTAssertEqual(try kid(of: keys.sign([1, 2, 3])), second.keyId)
        XCTAssertEqual(keys.set.status(of: first, at: clock.now()), .previous)
        XCTAssertEqual(keys.set.status(of: second, at: clock.now()), .current)
    }

    /// A wall clock stepped back before every activation still signs: with the first key to
    /// activate, never with none.
    func testAClockSteppedBackStillSigns() throws {
        let first = key(created: t0, activates: t0)
        let second = key(created: t0 + 1000, activates: t0 + 300_000)
        let clock = ManualClock(t0)
        let keys = SigningKeys(try SigningKeySet(keys: [first, second], now: clock.now()), clock: clock)
        clock.step(ms: -3_600_000)
        XCTAssertEqual(try kid(of: keys.sign([1])), first.keyId)
        XCTAssertEqual(keys.set.status(of: first, at: clock.now()), .current)
        XCTAssertEqual(keys.set.status(of: second, at: clock.now()), .next)
    }

    func testRetiredKeysNeverSignAndLeaveThePublicationWhenTheirPeriodEnds() throws {
        let old = key(created: t0, activates: t0, retired: t0 + 10, until: t0 + 60_000)
        let current = key(created: t0 + 5, activates: t0 + 5)
        let set = try SigningKeySet(keys: [old, current], now: t0 + 20)
        XCTAssertEqual(set.current(at: t0 + 20)?.keyId, current.keyId)
        XCTAssertEqual(set.published(at: t0 + 59_999).count, 2)
        XCTAssertEqual(set.published(at: t0 + 60_000).map(\.keyId), [current.keyId])
        XCTAssertEqual(set.status(of: old, at: t0 + 59_999), .retired)
        XCTAssertEqual(set.status(of: old, at: t0 + 60_000), .expired)
        XCTAssertThrowsError(try SigningKeySet(keys: [old], now: t0 + 20)) { XCTAssertEqual($0 as? SigningKeyError, .noCurrentKey) }
        XCTAssertThrowsError(try SigningKeySet(keys: [], now: t0)) { XCTAssertEqual($0 as? SigningKeyError, .noKey) }
    }
}
