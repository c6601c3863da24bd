import InsightTesting
import JSON
import XCTest

@testable import CoachingModel

/// The ensemble walks several trees side by side; its score and contributions must equal, bit
/// for bit, a plain walk of one tree after another over the same exported model.
final class TreeWalkTests: XCTestCase {
    /// Draws from a seeded generator.
    struct Random {
        var generator: SplitMix64
        mutating func below(_ n: Int) -> Int { Int(generator.next() % UInt64(n)) }
        mutating func unit() -> Double { Double(generator.next() >> 11) / Double(1 << 53) }
    }

    /// One tree as exported: splits [feature, threshold, defaultLeft, missingType, left, right,
    /// value] numbered parents first, children >= 0 splits and < 0 leaves (~index).
    struct Tree {
        var splits: [[Double]] = []
        var leaves: [Double] = []
    }

    /// A random tree of `splitCount` splits over `features` features.
    static func tree(_ splitCount: Int, features: Int, _ random: inout Random) -> Tree {
        var tree = Tree()
        guard splitCount > 0 else {
            tree.leaves = [random.unit() - 0.5]
            return tree
        }
        // Grow by splitting a random open child; open children become leaves at the end.
        var open: [(split: Int, side: Int)] = []
        var children: [[Int]] = []
        for s in 0..<splitCount {
            if s > 0 {
                let k = random.below(open.count)
                children[open[k].split][open[k].side] = s
                open.remove(at: k)
            }
            children.append([0, 0])
            open.append((s, 0))
            open.append((s, 1))
        }
        for (leaf, child) in open.enumerated() { children[child.split][child.side] = ~leaf }
        tree.leaves = (0..<open.count).map { _ in random.unit() - 0.5 }
        for s in 0..<splitCount {
            tree.splits.append([
                Double(random.below(features)), random.unit(), Double(random.below(2)),
                Double(random.below(3)), Double(children[s][0]), Double(children[s][1]),
                random.unit() - 0.5
            ])
        }
        return tree
    }

    /// LightGBM's decision, written out independently of the ensemble's.
    static func goesLeft(_ split: [Double], _ input: Double) -> Bool {
        let missingType = Int(split[3]), defaultLeft = split[2] == 1
        var v = input
        if missingType != 2 && v.isNaN { v = 0 }
        if missingType == 1 && abs(v) <= TreeEnsemble.zeroThreshold { return defaultLeft }
        if missingType == 2 && v.isNaN { return defaultLeft }
        return v <= split[1]
    }

    /// Score and Saabas contributions, one tree after another.
    static func reference(_ trees: [Tree], _ x: [Double]) -> (Double, [Double]) {
        var total = 0.0
        var out = [Double](repeating: 0, count: x.count)
        for tree in trees {
            guard !tree.splits.isEmpty else {
                total += tree.leaves[0]
                continue
            }
            var node = 0
            var parent = tree.splits[0][6]
            while true {
                let split = tree.splits[node]
                let child = Int(goesLeft(split, x[Int(split[0])]) ? split[4] : split[5])
                let value = child >= 0 ? tree.splits[child][6] : tree.leaves[~child]
                out[Int(split[0])] += value - parent
                parent = value
                if child < 0 {
                    total += value
                    break
                }
                node = child
            }
        }
        return (total, out)
    }

    static func json(_ trees: [Tree], features: Int) -> JSONValue {
        .object(
            JSONObject([
                ("format", .string("insightd.tree-ensemble/1")), ("objective", .string("binary")),
                ("scoreTransform", .string("sigmoid")),
                ("featureNames", .array((0..<features).map { .string("f\($0)") })),
                (
                    "trees",
                    .array(
                        trees.map { tree in
                            .object(
                                JSONObject([
                                    ("splits", .array(tree.splits.map { .array($0.map { .number($0) }) })),
                                    ("leaves", .array(tree.leaves.map { .number($0) }))
                                ]))
                        })
                )
            ]))
    }

    func testWalkingTreesSideBySideGivesExactlyTheSequentialScoreAndContributions() throws {
        var random = Random(generator: SplitMix64(seed: 7))
        // Tree counts around multiples of four, single-leaf trees, shallow and very deep trees.
        for treeCount in [1, 2, 3, 4, 5, 7, 8, 9, 33] {
            let features = 1 + random.below(12)
            let trees = (0..<treeCount).map { t in
                Self.tree(t % 6 == 5 ? 0 : random.below(t % 3 == 0 ? 60 : 8) + 1, features: features, &random)
            }
            let ensemble = try TreeEnsemble(json: Self.json(trees, features: features))
            for _ in 0..<200 {
                let x = (0..<features).map { _ -> Double in
                    switch random.below(7) {
                    case 0: return .nan
                    case 1: return 0
                    case 2:
                        // Exactly a threshold: equal goes left.
                        let tree = trees[random.below(trees.count)]
                        return tree.splits.isEmpty ? 0.5 : tree.splits[random.below(tree.splits.count)][1]
                    default: return TreeEnsemble.prepare(random.unit() * 1.2 - 0.1)
                    }
                }
                let (raw, contributions) = Self.reference(trees, x)
                let walked = ensemble.scoreAndContributions(x)
                XCTAssertEqual(walked.raw.bitPattern, raw.bitPattern, "\(treeCount) trees")
                XCTAssertEqual(walked.contributions.map(\.bitPattern), contributions.map(\.bitPattern), "\(treeCount) trees")
                XCTAssertEqual(ensemble.rawScore(x).bitPattern, raw.bitPattern)
            }
        }
    }
}
