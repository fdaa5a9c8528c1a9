# lockbench: `make run` for the main job, `make test` for the tests.
BIN      := bin/lockbench
RUN_ARGS ?= --backend redis --nemesis pause
GO_TEST  ?= go test -count=1 -timeout 50m

.PHONY: all build deps images run test lint unit bench parallelism mutants powerloss fuzz compose clean

all: build

# A static binary: the same file runs on the host and inside the node image.
# The version and revision are linked in for builds where Go stamps none
# (-buildvcs=false, a git worktree); where Go does, its stamps win. The
# version is the tag on HEAD, else a pseudo-version as Go would make it.
REVISION := $(shell git rev-parse HEAD 2>/dev/null)$(shell git diff --quiet HEAD 2>/dev/null || echo -dirty)
VERSION  := $(shell git describe --tags --exact-match 2>/dev/null || \
              TZ=UTC git show -s --abbrev=12 --date=format-local:%Y%m%d%H%M%S --format=v0.0.0-%cd-%h HEAD 2>/dev/null)
LDFLAGS  := -X github.com/lockbench/lockbench/verdict.linkedVersion=$(VERSION) \
            -X github.com/lockbench/lockbench/verdict.linkedRevision=$(REVISION)
build:
	CGO_ENABLED=0 go build -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/lockbench

# Debian packages: debootstrap builds the node image's base when no
# registry is reachable, a C compiler builds the clock shim, and Chromium
# renders the reports in their test; shellcheck checks the workflow's scripts.
PACKAGES := debootstrap gcc chromium shellcheck
deps:
	@missing=""; for p in $(PACKAGES); do command -v $$p >/dev/null || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then echo "installing$$missing (Debian packages)"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; fi

images: build deps
	$(BIN) images build

# Exit 1 (invalid) or 2 (unknown) is a verdict, not a failure of the job.
run: images
	@$(BIN) run $(RUN_ARGS); s=$$?; [ $$s -le 2 ] || exit $$s

test: deps lint
	go vet ./...
	$(GO_TEST) ./...

# The workflow has no other test before it runs on GitHub: actionlint
# checks its syntax, expressions, job graph and action inputs (and its
# shell scripts, when shellcheck is installed).
ACTIONLINT := go run github.com/rhysd/actionlint/cmd/actionlint@v1.7.12
lint:
	$(ACTIONLINT) .github/workflows/lockbench.yml

# The mutation score, by hand (not in CI): every known-broken client under
# the fault that exposes it and the correct client beside it, 5 runs each.
# Exit 1 while a variant survives a run or a control is invalid in one.
MUTANTS_ARGS ?= --runs 5 --ttl 1s --time-limit 10s --nemesis-interval 3s --concurrency 3 --seed 1500
mutants: images
	$(BIN) matrix --preset mutants $(MUTANTS_ARGS)

unit:
	$(GO_TEST) -short ./...

# Benchmarks print benchstat-comparable lines: checkers on generated
# histories, the check of a generated 10⁶-event run against python3
# parsing its lines, then bring-up (etcd's also against its own first
# election), lock cycles, whole runs' overhead by phase, time to first
# anomaly and the default grid's wall time against their floors (these
# start containers; the grid takes about 20 minutes).
bench: images
	go test -run '^$$' -bench . -benchmem -timeout 30m ./checkers/
	go test -run '^$$' -bench 'Import|Compare' -benchtime 3x -timeout 30m ./catalog/
	go test -run '^$$' -bench 'CheckLongRun' -benchtime 3x -timeout 30m ./runner/
	go test -run '^$$' -bench 'BringUp|LockCycles|RunOverhead' -benchtime 3x -timeout 30m ./runner/
	go test -run '^$$' -bench 'TimeToFirstAnomaly' -benchtime 10x -timeout 30m ./runner/
	go test -run '^$$' -bench 'DefaultGrid' -benchtime 1x -timeout 30m ./e2e/

# matrix --parallel 1, 2 and 4 on one grid of expected-valid and
# expected-invalid cells: wall time against one at a time, detection rate,
# false positives (about 25 minutes on 2 cores; by hand, not in CI).
parallelism: images
	go test -run '^$$' -bench 'ParallelCells' -benchtime 1x -timeout 60m ./e2e/

# How often a power loss finds what it should, by hand: POWERLOSS_RUNS runs
# of each of the end-to-end test's Redis runs (power loss under everysec and
# under always, and everysec under kill as the control), on fresh seeds.
# Each line ends with --test-count's sum of the verdicts; an invalid verdict
# is the finding, not a failure of the target.
POWERLOSS_RUNS ?= 10
POWERLOSS_ARGS := --backend redis --fence all --ttl 500ms --work-max 1500ms --time-limit 12s --nemesis-interval 4s --seed 100 --test-count $(POWERLOSS_RUNS)
powerloss: images
	@for a in "--redis-persistence everysec --nemesis power-loss" "--redis-persistence always --nemesis power-loss" \
		"--redis-persistence everysec --nemesis kill"; do \
		echo "== $$a"; $(BIN) run $(POWERLOSS_ARGS) $$a 2>&1 | tail -n 4; \
	done

# Each target fuzzes for FUZZTIME; the seed corpora under testdata/fuzz are
# in git and also run as plain tests.
FUZZTIME ?= 30s
fuzz:
	go test -run '^$$' -fuzz '^FuzzDecode$$' -fuzztime $(FUZZTIME) ./history/
	go test -run '^$$' -fuzz '^FuzzReadLog$$' -fuzztime $(FUZZTIME) ./store/
	for f in FuzzLinearizable FuzzLinearizablePieces FuzzFence FuzzLostUpdates FuzzExclusion FuzzOverall; do \
	  go test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) ./checkers/ || exit 1; done

# docker-compose.yml is rendered from the topologies the harness runs.
compose: build
	$(BIN) compose > docker-compose.yml

# Removes what runs that are no longer live left behind; runs still going on,
# from any terminal or job on this engine, are kept (see the README).
clean: build
	$(BIN) clean
