# insightd — the two commands that matter are `make run` and `make test`.
SWIFT        ?= swift
STATE_DIR    ?= $(CURDIR)/.state
# make run's address: LISTEN=host:port on the command line, else an exported INSIGHTD_LISTEN.
LISTEN       ?= $(or $(INSIGHTD_LISTEN),127.0.0.1:8080)
RELEASE_BIN  := .build/release
# The end-to-end suites, run against the release binaries (e2e, crash, API fuzzing, documentation
# examples). Not `tests/`: on a case-insensitive file system that is the same folder as `Tests/`.
TESTS_DIR    := e2e

.PHONY: deps deps-test build run run-cluster format lint-format test test-unit test-training test-loop test-e2e test-cluster test-failover test-crash test-api test-console console-screenshots test-capture test-clients test-docs fuzz model bench bench-instructions clean help

help:
	@echo "make run    install missing packages, build, start insightd on $(LISTEN) (state in $(STATE_DIR))"
	@echo "make test   install missing packages, build, run every test"
	@echo "make run-cluster  three instances on a private PostgreSQL and Redis behind nginx on 127.0.0.1:8080"
	@echo "make fuzz   libFuzzer targets, FUZZ_SECONDS (60) each; a crash fails it (not part of make test)"
	@echo "make model  regenerate models/ with the offline trainer (Python venv)"
	@echo "make bench  micro-benchmarks, insightd vs nginx with wrk, then 1 and 2 instances on PostgreSQL + Redis (prints figures, never fails)"
	@echo "make bench-instructions  instructions per request under callgrind (WORKLOAD=W2|W1): steadier than req/s"
	@echo "make console-screenshots  the console test, copying its screenshots over docs/console/*.png"
	@echo "make format       rewrite the Swift sources in the style of .swift-format; make lint-format checks it"

deps:
	@sh scripts/install-deps.sh

deps-test:
	@sh scripts/install-deps.sh test

build: deps
	$(SWIFT) build -c release --product insightd
	$(SWIFT) build -c release --product insightctl

run: build
	@mkdir -p "$(STATE_DIR)"
	@echo ""
	@echo "insightd will listen on http://$(LISTEN) with its state in $(STATE_DIR)"
	@echo "Get an API key (in another shell):"
	@echo "  INSIGHTD_STATE_DIR=$(STATE_DIR) $(RELEASE_BIN)/insightctl callers create --name demo --roles evaluate,labels --environment sandbox"
	@echo ""
	INSIGHTD_STATE_DIR="$(STATE_DIR)" INSIGHTD_LISTEN="$(LISTEN)" INSIGHTD_MODELS_DIR="$(CURDIR)/models" \
		exec $(RELEASE_BIN)/insightd

# Three instances on a private PostgreSQL and Redis behind nginx on 127.0.0.1:8080, thrown away
# on Ctrl-C (docs/deployment.md, "Scaling out").
run-cluster: deps-test build
	sh scripts/run-cluster.sh $(RELEASE_BIN)

test: deps-test lint-format test-unit test-training test-loop test-e2e test-cluster test-failover test-docs test-crash test-api test-console test-capture test-clients

test-unit:
	$(SWIFT) build --build-tests
	$(SWIFT) test --skip-build

# The trainer's tests (train.py --from-export) in its venv, created from requirements.txt if missing.
test-training:
	bash training/test.sh

# The feedback loop end to end (issue 24): capture, reports, late labels, the report against an
# independent count, export, training a version from it, and that version as a shadow.
test-loop: build
	sh $(TESTS_DIR)/feedback-loop.sh $(RELEASE_BIN)

test-e2e: build
	sh $(TESTS_DIR)/e2e.sh $(RELEASE_BIN)

# Three instances on their own PostgreSQL and Redis (started as ordinary processes), behind nginx.
test-cluster: build
	sh $(TESTS_DIR)/cluster.sh $(RELEASE_BIN)

# PostgreSQL (a primary and a synchronous standby from pg_basebackup) and Redis (a master, a replica,
# three sentinels) failed over under load: nothing acknowledged lost, the refusal windows printed.
test-failover: build
	sh $(TESTS_DIR)/failover.sh $(RELEASE_BIN)

test-crash: build
	sh $(TESTS_DIR)/crash.sh $(RELEASE_BIN) 3

# schemathesis (pinned, in .venv-api) against a live daemon; bounded by $(TESTS_DIR)/schemathesis.toml.
test-api: build
	sh $(TESTS_DIR)/api-fuzz.sh $(RELEASE_BIN)

# The admin console in headless Chromium (Debian's chromium and chromium-driver) through the pinned
# Selenium of $(TESTS_DIR)/requirements-console.txt (in .venv-console), against a live daemon. Its
# screenshots go to .build/console-screenshots; `make console-screenshots` also copies them over
# docs/console/*.png (make test leaves the tree as it found it).
test-console: build
	sh $(TESTS_DIR)/console.sh $(RELEASE_BIN)

console-screenshots: build
	CONSOLE_UPDATE_DOCS=1 sh $(TESTS_DIR)/console.sh $(RELEASE_BIN)

# The web capture kit (capture/web): its mapping under `node --test` (a fake DOM that records
# every property the kit reads), then the kit in headless Chromium on `insightd-demo --web`'s
# payment page against a live daemon (the console's browser, driver and Selenium venv).
test-capture: build
	node --test capture/web/tests/
	$(SWIFT) build -c release --product insightd-demo
	sh $(TESTS_DIR)/capture.sh $(RELEASE_BIN)

# The client libraries of clients/ (issue 39): each one's unit tests, its operations and
# enumerations against openapi/, then the conformance scenario of clients/conformance/ run by each
# one's driver against a live daemon (with a tampering proxy), in e2e/clients.sh.
test-clients: build
	sh $(TESTS_DIR)/clients.sh $(RELEASE_BIN)

# Every shell example of README.md and docs/ against a real daemon, as a reader would run it
# (markers and rules: $(TESTS_DIR)/docs-examples.sh); the demo is one of the examples. First,
# the pointers into docs/ (nothing cites the old specification; every cited section and link
# anchor exists), the module table of docs/architecture.md against Package.swift, the container
# image's libraries against what the binaries link, and deploy/'s Kubernetes manifests against
# the Kubernetes API's schemas (pinned kubernetes-validate, in .venv-kubernetes).
test-docs: build
	python3 scripts/check-doc-references.py
	sh scripts/check-module-graph.sh
	sh scripts/check-container-libraries.sh $(RELEASE_BIN)
	sh scripts/check-kubernetes-manifests.sh
	$(SWIFT) build -c release --product insightd-demo
	bash $(TESTS_DIR)/docs-examples.sh $(RELEASE_BIN)

# The Swift code's layout, by the toolchain's swift-format and the repository's .swift-format
# (docs/testing.md, "Code format"). lint-format fails on any finding.
FORMAT_PATHS := Package.swift Sources Tests Plugins
format:
	$(SWIFT) format format --in-place --recursive --parallel $(FORMAT_PATHS)

lint-format:
	$(SWIFT) format lint --strict --recursive --parallel $(FORMAT_PATHS)

FUZZ_SECONDS ?= 60
fuzz: deps
	bash fuzz/run.sh $(FUZZ_SECONDS)

# The embedded daemon against nginx, the multi-instance mode on PostgreSQL and Redis, then the
# engines' clients alone (round trips, the pipelined writer) and the subject index on 2,000,000
# evaluations (XCTest cases `make test` skips).
bench: deps-test
	SWIFT="$(SWIFT)" bash bench/run.sh
	BIN_DIR=$$($(SWIFT) build -c release --show-bin-path) && sh bench/cluster.sh "$$BIN_DIR"
	$(SWIFT) build --build-tests
	INSIGHTD_BENCH_FIGURES=1 $(SWIFT) test --skip-build --filter 'RoundTripCostTests|PostgresWriterFiguresTests|SubjectIndexFiguresTests' 2>&1 \
		| grep -E '^(redis |PostgreSQL writer figures|subject index figures)' || true

bench-instructions: deps
	SWIFT="$(SWIFT)" sh bench/instructions.sh $(WORKLOAD)

model:
	bash training/make-model.sh

clean:
	rm -rf .build
