import JSON

/// A LightGBM binary-classification ensemble, evaluated exactly as LightGBM's own
/// `predict(raw_score=True)` does, so its raw scores match LightGBM's bit for bit (the fixtures
/// hold it to 1e-9).
///
/// The artifact is `model.json` in the `insightd.tree-ensemble/1` format that training/train.py
/// exports from `Booster.dump_model()` (docs/model-card.md describes it). Every tree is
/// flattened into shared arrays; a child reference `>= 0` is a split (global index), `< 0` is the
/// leaf `~child`.
struct TreeEnsemble: Sendable {
    let featureNames: [String]
    let treeCount: Int
    // Per tree: the root reference (a split, or ~leaf for a tree that is a single leaf).
    private let roots: [Int32]
    // Per split, packed so that one split is one load of 24 bytes (the walk touches a few
    // hundred splits per assessment; separate arrays per field cost a cache miss each).
    private let splits: [Split]
    // Per leaf.
    private let leafValue: [Double]
    /// Per leaf, where its path starts in `pathSteps`; one more entry than leaves, so leaf `l`'s
    /// path is `pathSteps[pathStart[l] ..< pathStart[l + 1]]`.
    private let pathStart: [Int32]
    /// Every leaf's path from its tree's root, one step per split passed, in path order. A leaf
    /// fixes its path, so the Saabas attribution of reaching it is known at load: the walk only
    /// finds leaves, and attributing adds the leaf's recorded steps.
    private let pathSteps: [Step]

    /// One split, as the walk needs it: the decision folded into a threshold and one flag
    /// (24 bytes, so one load per step).
    private struct Split {
        var threshold: Double
        var feature: Int32
        var left: Int32
        var right: Int32
        /// 1 when NaN goes right (missing type None: NaN counts as 0; NaN: the default branch).
        /// Any other value goes right when `v > threshold`, which is false for NaN, so the
        /// decision is `(v > threshold) | (isNaN & nanGoesRight)`.
        var nanGoesRight: UInt8
        /// Missing type Zero: zero (and NaN) take the default branch; decided the long way.
        var zeroIsMissing: Bool
        var defaultLeft: Bool
    }

    /// One step of a path, for attribution: the split's feature and the change in node value
    /// it made (the child's value minus the split's: LightGBM's `internal_value`s, a leaf's value
    /// for a leaf child).
    private struct Step {
        var feature: Int32
        var delta: Double
    }

    /// LightGBM's `kZeroThreshold`: the float literal `1e-35f` widened to double.
    static let zeroThreshold = Double(Float(1e-35))
    /// LightGBM writes an infinite split bound as ±1e300 (`Common::AvoidInf`) but compares against
    /// the infinity it holds in memory; reading ±1e300 back as ±infinity reproduces `predict()`.
    static let infiniteThreshold = 1e300

    private static let missingNone: UInt8 = 0, missingZero: UInt8 = 1, missingNaN: UInt8 = 2

    struct FormatError: Error { var message: String }

    /// Parses and checks the exported ensemble. Every structural rule that the walk relies on is
    /// verified here (children in range, each node reached once, children after parents, so no
    /// cycle), so evaluation needs no bounds checks beyond Swift's own.
    init(json: JSONValue) throws(FormatError) {
        func fail(_ m: String) -> FormatError { FormatError(message: m) }
        guard let root = json.objectValue else { throw fail("the document is not a JSON object") }
        guard root["format"]?.stringValue == "insightd.tree-ensemble/1" else {
            throw fail("format is not \"insightd.tree-ensemble/1\"")
        }
        guard root["objective"]?.stringValue == "binary" else { throw fail("objective is not \"binary\"") }
        guard root["scoreTransform"]?.stringValue == "sigmoid" else {
            throw fail("scoreTransform is not \"sigmoid\"")
        }
        guard let names = root["featureNames"]?.arrayValue?.compactMap(\.stringValue),
            names.count == root["featureNames"]?.arrayValue?.count, !names.isEmpty
        else { throw fail("featureNames is not a non-empty list of strings") }
        guard let trees = root["trees"]?.arrayValue, !trees.isEmpty else {
            throw fail("trees is not a non-empty list")
        }

        var roots: [Int32] = [], splitNodes: [Split] = [], leafValue: [Double] = []
        var pathStart: [Int32] = [], pathSteps: [Step] = []

        for (t, tree) in trees.enumerated() {
            let here = "trees[\(t)]"
            guard let object = tree.objectValue,
                let splits = object["splits"]?.arrayValue,
                let leaves = object["leaves"]?.arrayValue
            else { throw fail("\(here) lacks splits or leaves") }
            guard leaves.count == splits.count + 1 else {
                throw fail("\(here) has \(splits.count) splits but \(leaves.count) leaves")
            }
            let splitBase = splitNodes.count, leafBase = leafValue.count
            guard splitBase + splits.count < Int(Int32.max), leafBase + leaves.count < Int(Int32.max)
            else { throw fail("the model is too large") }
            for (k, leaf) in leaves.enumerated() {
                guard let v = leaf.numberValue else { throw fail("\(here).leaves[\(k)] is not a number") }
                leafValue.append(v)
            }
            var leafSeen = [Bool](repeating: false, count: leaves.count)
            var splitSeen = [Bool](repeating: false, count: splits.count)
            if splits.isEmpty {
                roots.append(~Int32(leafBase))
                pathStart.append(Int32(pathSteps.count))  // the root is the leaf: an empty path
                continue
            }
            roots.append(Int32(splitBase))
            splitSeen[0] = true
            var rows:
                [(
                    feature: Int, threshold: Double, defaultLeft: Bool, missingType: Int,
                    children: [Int32], value: Double
                )] = []
            for (s, split) in splits.enumerated() {
                let at = "\(here).splits[\(s)]"
                guard let row = split.arrayValue, row.count == 7,
                    let f = row[0].intValue, let thr = row[1].numberValue,
                    let dl = row[2].intValue, let mt = row[3].intValue,
                    let l = row[4].intValue, let r = row[5].intValue,
                    let iv = row[6].numberValue
                else { throw fail("\(at) is not [feature, threshold, defaultLeft, missingType, left, right, value]") }
                guard f >= 0, f < names.count else { throw fail("\(at) uses feature \(f) of \(names.count)") }
                guard dl == 0 || dl == 1 else { throw fail("\(at) defaultLeft is not 0 or 1") }
                guard (0...2).contains(mt) else { throw fail("\(at) missingType is not 0, 1 or 2") }
                var children: [Int32] = []
                for child in [l, r] {
                    if child >= 0 {
                        // LightGBM numbers a split after its parent; requiring it rules out cycles.
                        guard child > s, child < splits.count, !splitSeen[child] else {
                            throw fail("\(at) has an invalid child split \(child)")
                        }
                        splitSeen[child] = true
                        children.append(Int32(child))
                    } else {
                        let leaf = ~child
                        guard leaf < leaves.count, !leafSeen[leaf] else {
                            throw fail("\(at) has an invalid child leaf \(leaf)")
                        }
                        leafSeen[leaf] = true
                        children.append(~Int32(leaf))
                    }
                }
                let threshold =
                    thr >= TreeEnsemble.infiniteThreshold
                    ? .infinity
                    : thr <= -TreeEnsemble.infiniteThreshold ? -.infinity : thr
                rows.append((f, threshold, dl == 1, mt, children, iv))
            }
            // Every child's value is known only once the whole tree is read (children follow
            // their parents).
            func value(_ child: Int32) -> Double {
                child >= 0 ? rows[Int(child)].value : leafValue[leafBase + Int(~child)]
            }
            func global(_ child: Int32) -> Int32 {
                child >= 0 ? Int32(splitBase) + child : ~(Int32(leafBase) + ~child)
            }
            for row in rows {
                let (left, right) = (row.children[0], row.children[1])
                splitNodes.append(
                    Split(
                        threshold: row.threshold,
                        feature: Int32(row.feature), left: global(left), right: global(right),
                        nanGoesRight: Self.bit(row.missingType == Int(TreeEnsemble.missingNaN) ? !row.defaultLeft : !(0 <= row.threshold)),
                        zeroIsMissing: row.missingType == Int(TreeEnsemble.missingZero), defaultLeft: row.defaultLeft))
            }
            guard splitSeen.allSatisfy({ $0 }), leafSeen.allSatisfy({ $0 }) else {
                throw fail("\(here) has nodes that no path reaches")
            }
            // Each node's path from the root; a split's path is complete before its children's
            // (children follow their parents).
            var splitPath = [[Step]](repeating: [], count: rows.count)
            var leafPath = [[Step]](repeating: [], count: leaves.count)
            for (s, row) in rows.enumerated() {
                for child in row.children {
                    let path = splitPath[s] + [Step(feature: Int32(row.feature), delta: value(child) - row.value)]
                    if child >= 0 { splitPath[Int(child)] = path } else { leafPath[Int(~child)] = path }
                }
            }
            for path in leafPath {
                pathStart.append(Int32(pathSteps.count))
                pathSteps += path
            }
            guard pathSteps.count < Int(Int32.max) else { throw fail("the model is too large") }
        }
        pathStart.append(Int32(pathSteps.count))
        self.featureNames = names
        self.treeCount = trees.count
        self.roots = roots
        self.splits = splitNodes
        self.leafValue = leafValue
        self.pathStart = pathStart
        self.pathSteps = pathSteps
    }

    /// LightGBM's dense-row predictor drops values within the zero band, so they arrive as 0.
    @inline(__always)
    static func prepare(_ v: Double) -> Double {
        abs(v) <= zeroThreshold ? 0 : v
    }

    /// LightGBM's `NumericalDecision`: NaN counts as 0 unless missing values are NaN; a missing
    /// value (NaN, or zero for missingType Zero) takes the default branch; otherwise `<=` goes
    /// left. Folded at load into one comparison and one flag (see `Split.nanGoesRight`); only
    /// missing type Zero needs the long way.
    ///
    /// The walk branches on the answer rather than choosing the child by a mask (no branch to
    /// mispredict, but slower even over varied sessions: docs/performance.md): a predicted branch
    /// lets the processor start loading the next split before the comparison is known, and is
    /// right often enough.
    @inline(__always)
    private static func goesRight(_ split: Split, _ v: Double) -> Bool {
        if _slowPath(split.zeroIsMissing) {
            if v.isNaN || (v >= -TreeEnsemble.zeroThreshold && v <= TreeEnsemble.zeroThreshold) {
                return !split.defaultLeft
            }
            return !(v <= split.threshold)
        }
        return (bit(v > split.threshold) | (bit(v.isNaN) & split.nanGoesRight)) != 0
    }

    /// A Bool as the integer 0 or 1 (its representation), to combine tests without a branch each.
    @inline(__always)
    private static func bit(_ b: Bool) -> UInt8 { unsafeBitCast(b, to: UInt8.self) }

    /// The raw score (log-odds) for `x`, a vector in `featureNames` order, already `prepare`d.
    /// Trees are summed in order from 0.0, as LightGBM does, so the result is bit-identical.
    func rawScore(_ x: [Double]) -> Double {
        walk(x, attributing: nil)
    }

    /// The raw score and the Saabas path attribution in one walk: walking each tree, the split's
    /// feature is credited with the change from the parent node's value to the child's. Feature
    /// contributions plus the sum of the root values equal the raw score (up to rounding); the
    /// score is summed exactly as `rawScore` sums it.
    func scoreAndContributions(_ x: [Double]) -> (raw: Double, contributions: [Double]) {
        var out = [Double](repeating: 0, count: featureNames.count)
        let raw = out.withUnsafeMutableBufferPointer { walk(x, attributing: $0) }
        return (raw, out)
    }

    /// Saabas contributions alone (see `scoreAndContributions`).
    func contributions(_ x: [Double]) -> [Double] {
        scoreAndContributions(x).contributions
    }

    /// Walks every tree for `x`; with `attributing`, also adds each feature's contributions to
    /// it. The structure was checked at load (children in range, no cycles), but `x` comes from
    /// the caller: its length is checked once here, so the walk itself reads without checks.
    ///
    /// Four trees are walked side by side: each step waits for the split it loads, and four
    /// independent walks let those waits overlap (about a fifth less time than one by one). They
    /// are summed exactly as one by one, though: leaves in tree order, and each leaf's path steps
    /// in tree order and path order, so score and contributions are bit-identical.
    @inline(__always)
    private func walk(_ x: [Double], attributing out: UnsafeMutableBufferPointer<Double>?) -> Double {
        precondition(x.count == featureNames.count, "an input vector of the wrong length")
        return x.withUnsafeBufferPointer { x in
            splits.withUnsafeBufferPointer { splits in
                leafValue.withUnsafeBufferPointer { leaves in
                    roots.withUnsafeBufferPointer { roots in
                        pathStart.withUnsafeBufferPointer { pathStart in
                            pathSteps.withUnsafeBufferPointer { pathSteps in
                                // A lane's node: a split (>= 0) while walking, then `~leaf`. A lane
                                // past the last tree starts at leaf 0 and is never summed.
                                @inline(__always)
                                func start(_ t: Int) -> Int32 { t < roots.count ? roots[t] : ~0 }
                                @inline(__always)
                                func advance(_ node: inout Int32) {
                                    let split = splits[Int(node)]
                                    node = Self.goesRight(split, x[Int(split.feature)]) ? split.right : split.left
                                }
                                var total = 0.0
                                @inline(__always)
                                func finish(_ node: Int32, tree: Int) {
                                    guard tree < roots.count else { return }
                                    let leaf = Int(~node)
                                    total += leaves[leaf]
                                    guard let out else { return }
                                    for k in Int(pathStart[leaf])..<Int(pathStart[leaf &+ 1]) {
                                        let step = pathSteps[k]
                                        out[Int(step.feature)] += step.delta
                                    }
                                }
                                var first = 0
                                while first < roots.count {
                                    var a = start(first), b = start(first + 1), c = start(first + 2), d = start(first + 3)
                                    // Some lane still walks while some node is >= 0, i.e. while the
                                    // sign bits are not all set.
                                    while (a & b & c & d) >= 0 {
                                        if a >= 0 { advance(&a) }
                                        if b >= 0 { advance(&b) }
                                        if c >= 0 { advance(&c) }
                                        if d >= 0 { advance(&d) }
                                    }
                                    finish(a, tree: first)
                                    finish(b, tree: first + 1)
                                    finish(c, tree: first + 2)
                                    finish(d, tree: first + 3)
                                    first += 4
                                }
                                return total
                            }
                        }
                    }
                }
            }
        }
    }
}
