import InsightClient

/// Interaction sessions shaped like the ones the coaching model was trained on.
enum Sessions {
    /// A routine payment: quick, steady typing, no call.
    static let genuine: [InteractionEvent] = {
        var events = [InteractionEvent(at: 0, .sessionStart), InteractionEvent(at: 1400, .fieldFocus, field: .payee)]
        var t = 1400
        for i in 0..<22 { t += 140 + (i % 3) * 25; events.append(InteractionEvent(at: t, .keyDown, field: .payee)) }
        t += 900; events.append(InteractionEvent(at: t, .fieldFocus, field: .amount))
        for _ in 0..<3 { t += 160; events.append(InteractionEvent(at: t, .keyDown, field: .amount)) }
        t += 1800; events.append(InteractionEvent(at: t, .submit))
        return events
    }()

    /// Authority impersonation: the phone at the ear, the payee's digits typed in dictated
    /// bursts, a correction to the amount, a long hesitation before submit.
    static let coached: [InteractionEvent] = {
        var events = [
            InteractionEvent(at: 0, .sessionStart), InteractionEvent(at: 200, .proximityNear),
            InteractionEvent(at: 9000, .fieldFocus, field: .payee)
        ]
        var t = 9000
        for burst in 0..<6 {
            for _ in 0..<4 { t += 180; events.append(InteractionEvent(at: t, .keyDown, field: .payee)) }
            t += burst % 2 == 0 ? 4200 : 3600
        }
        t += 2000; events.append(InteractionEvent(at: t, .fieldFocus, field: .amount))
        for _ in 0..<4 { t += 900; events.append(InteractionEvent(at: t, .keyDown, field: .amount)) }
        t += 2500; events.append(InteractionEvent(at: t, .delete, field: .amount))
        t += 1500; events.append(InteractionEvent(at: t, .keyDown, field: .amount))
        t += 38000; events.append(InteractionEvent(at: t, .submit))
        return events
    }()

    /// A call that began before the session, with the screen shared.
    static let coachedDevice = DeviceFacts(
        activeCall: true, callStartedBeforeSession: true,
        screenSharing: true, remoteAccessApp: false)
}
