"""train.py --from-export: a version trained from the JSON lines of `insightctl training export`.

    training/test.sh        (make test runs it, in the trainer's venv)

The export is made here the way insightctl writes it (every feature by name, null = missing),
from simulated sessions run through features.py, the Python port of the daemon's extractor.
"""

import json
import math
import os
import subprocess
import sys
import tempfile
import unittest

import features as F
import simulate
import train

HERE = os.path.dirname(os.path.abspath(__file__))


def export_line(session, label):
    x = F.extract(simulate.events_as_tuples(session), session["interaction"]["device"])
    return {"label": label, "category": session["category"], "modelVersion": "2.0", "date": "2026-10-01",
            "features": {n: (None if math.isnan(v) else v) for n, v in zip(F.FEATURE_NAMES, x)}}


def make_export(path, sessions, labels=None):
    with open(path, "w") as fh:
        for i, s in enumerate(sessions):
            label = labels[i] if labels else ("confirmedFraud" if s["label"] else
                                              ("presumedGenuine" if i % 3 == 0 else "confirmedLegitimate"))
            fh.write(json.dumps(export_line(s, label)) + "\n")


def run_train(*args):
    return subprocess.run([sys.executable, os.path.join(HERE, "train.py"), *args], cwd=HERE,
                          capture_output=True, text=True, env=dict(os.environ, PYTHONHASHSEED="0", OMP_NUM_THREADS="1"))


class FromExportTests(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.sessions = simulate.generate(3000, 7)

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)
        self.export = os.path.join(self.tmp.name, "export.jsonl")
        self.out = os.path.join(self.tmp.name, "models")

    def test_trains_a_version_with_the_simulator_paths_files(self):
        make_export(self.export, self.sessions)
        r = run_train("--from-export", self.export, "--version", "3.0", "--out", self.out)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("3000 captured vectors", r.stderr)
        vdir = os.path.join(self.out, "3.0")
        self.assertEqual(sorted(os.listdir(vdir)), ["fixtures.json", "manifest.json", "model.json"])
        self.assertFalse(os.path.exists(os.path.join(self.out, "registry.json")), "not current unless asked")
        with open(os.path.join(vdir, "manifest.json")) as fh:
            manifest = json.load(fh)
        with open(os.path.join(vdir, "model.json")) as fh:
            model = json.load(fh)
        self.assertEqual(manifest["version"], "3.0")
        self.assertEqual(manifest["features"], train.VERSIONS[train.CURRENT]["features"], "the same feature order")
        self.assertEqual(model["featureNames"], manifest["features"])
        self.assertIn("insightctl training export", manifest["training"]["data"])
        self.assertEqual(manifest["training"]["sessions"], 3000)
        self.assertEqual(set(manifest["thresholds"]), set(train.CATEGORIES))
        # A model that learned something: the simulated coached sessions rank above genuine ones.
        self.assertGreater(manifest["metrics"]["rocAuc"], 0.8)
        with open(os.path.join(vdir, "fixtures.json")) as fh:
            fixtures = json.load(fh)
        self.assertGreater(len(fixtures["rows"]), 0)
        self.assertTrue(all("events" not in row for row in fixtures["rows"]), "an export has no events to replay")
        self.assertEqual(fixtures["featureNames"], F.FEATURE_NAMES)

    def test_presumed_genuine_rows_count_as_genuine(self):
        labels = ["confirmedFraud" if s["label"] else "presumedGenuine" for s in self.sessions[:600]]
        make_export(self.export, self.sessions[:600], labels)
        sessions, _X, y, idx = train.load_export(self.export)
        self.assertEqual(int(y.sum()), sum(1 for s in self.sessions[:600] if s["label"]))
        for split in ("train", "validation", "test"):
            self.assertEqual(set(y[idx[split]].tolist()), {0, 1}, f"both classes in {split}")
        self.assertEqual(sorted(i for ids in idx.values() for i in ids.tolist()), list(range(600)))

    def test_too_few_rows_is_refused_with_a_message(self):
        make_export(self.export, self.sessions[:150])
        r = run_train("--from-export", self.export, "--version", "3.0", "--out", self.out)
        self.assertEqual(r.returncode, 1)
        self.assertIn("150 rows; training needs at least 200", r.stderr)
        self.assertFalse(os.path.exists(self.out))

    def test_one_class_is_refused_with_a_message(self):
        genuine = [s for s in self.sessions if not s["label"]][:400]
        make_export(self.export, genuine)
        r = run_train("--from-export", self.export, "--version", "3.0", "--out", self.out)
        self.assertEqual(r.returncode, 1)
        self.assertIn("only one class: 0 confirmedFraud", r.stderr)

    def test_malformed_lines_are_named(self):
        make_export(self.export, self.sessions[:300])
        with open(self.export, "a") as fh:
            fh.write('{"label":"maybe","category":"payment","features":{}}\n')
        r = run_train("--from-export", self.export, "--version", "3.0", "--out", self.out)
        self.assertEqual(r.returncode, 1)
        self.assertIn("export.jsonl:301: needs a label of", r.stderr)
        with open(self.export, "w") as fh:
            fh.write('{"label":"confirmedFraud","category":"payment","features":{"eventId":"e1"}}\n')
        r = run_train("--from-export", self.export, "--version", "3.0", "--out", self.out)
        self.assertIn("export.jsonl:1: unknown features ['eventId']", r.stderr)

    def test_needs_a_version(self):
        make_export(self.export, self.sessions[:300])
        r = run_train("--from-export", self.export, "--out", self.out)
        self.assertEqual(r.returncode, 1)
        self.assertIn("--from-export trains one new version: give --version", r.stderr)


class WebProfileTests(unittest.TestCase):
    """simulate.py --profile web: what the web capture kit emits, and nothing a page cannot know."""

    @classmethod
    def setUpClass(cls):
        cls.sessions = simulate.generate(3000, 11, profile="web")

    def test_only_what_a_page_can_observe(self):
        allowed = {"sessionStart", "fieldFocus", "fieldBlur", "keyDown", "delete", "paste", "tap", "scroll",
                   "appBackground", "appForeground", "orientationChange", "submit"}
        for s in self.sessions:
            interaction = s["interaction"]
            self.assertEqual(set(interaction), {"events", "source"}, "no device facts, not even empty ones")
            self.assertEqual(interaction["source"], {"kit": "insight-capture-web", "version": "1.0.0", "platform": "web"})
            events = interaction["events"]
            self.assertLessEqual({e["type"] for e in events}, allowed)
            self.assertEqual(events[0], {"t": 0, "type": "sessionStart"})
            self.assertEqual(events[-1]["type"], "submit")
            F.validate(simulate.events_as_tuples(s))
            for e in events:
                if e["type"] in ("tap", "scroll", "appBackground", "appForeground", "orientationChange"):
                    self.assertNotIn("field", e, "the kit names no field for page events")
            scrolls = [e["t"] for e in events if e["type"] == "scroll"]
            self.assertTrue(all(b - a >= 250 for a, b in zip(scrolls, scrolls[1:])), "scroll is throttled to 250 ms")

    def test_web_behaviours_occur(self):
        """Autofill and password managers leave focused fields without a key; phones rotate
        rarely; pages are hidden by app switches; both classes are present."""
        def filled_without_keys(s):
            events, focused, typed = s["interaction"]["events"], None, False
            for e in events:
                if e["type"] == "fieldFocus":
                    focused, typed = e.get("field"), False
                elif e["type"] in ("keyDown", "delete", "paste"):
                    typed = True
                elif e["type"] == "fieldBlur" and focused in ("password", "otp") and not typed:
                    return True
            return False
        self.assertGreater(sum(filled_without_keys(s) for s in self.sessions), 50)
        types = [{e["type"] for e in s["interaction"]["events"]} for s in self.sessions]
        self.assertGreater(sum("appBackground" in t for t in types), 100)
        self.assertGreater(sum("orientationChange" in t for t in types), 5)
        self.assertLess(sum("orientationChange" in t for t in types), 200)
        labels = [s["label"] for s in self.sessions]
        self.assertGreater(sum(labels), 500)
        self.assertGreater(len(labels) - sum(labels), 1500)

    def test_the_app_profile_is_unchanged_by_the_web_one(self):
        """The web profile draws from its own stream: the app sessions (the built-in models'
        training data) are the same whether or not web sessions are generated in between."""
        before = simulate.generate(50, 7)
        simulate.generate(50, 7, profile="web")
        self.assertEqual(before, simulate.generate(50, 7))
        self.assertNotEqual(simulate.session(7, 3, "web")["interaction"]["events"], before[3]["interaction"]["events"])

    def test_print_one_prints_an_interaction_the_model_judges_as_its_kind(self):
        for kind, expected in (("coached", ("medium", "high")), ("genuine", ("unknown",))):
            r = subprocess.run([sys.executable, os.path.join(HERE, "simulate.py"), "--print-one", kind],
                               cwd=HERE, capture_output=True, text=True)
            self.assertEqual(r.returncode, 0, r.stderr)
            interaction = json.loads(r.stdout)
            self.assertEqual(set(interaction), {"events", "source"})
            self.assertEqual(interaction["events"][0], {"t": 0, "type": "sessionStart"})
            self.assertTrue(any(level in r.stderr for level in expected), r.stderr)
            self.assertIn("web thresholds", r.stderr)


if __name__ == "__main__":
    unittest.main()
