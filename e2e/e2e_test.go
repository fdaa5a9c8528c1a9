// Package e2e runs the lockbench binary as a user would, against real
// containers in the Docker engine, and checks what it decides and leaves.
package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/client"

	"github.com/lockbench/lockbench/checkers"
	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/rundir"
	"github.com/lockbench/lockbench/store"
)

var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "lockbench-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "lockbench")
	// As `make build` builds it: static, so the same file runs on the host
	// and inside the node image, with its version and revision linked in.
	build := exec.Command("make", "-s", "-C", "..", "build", "BIN="+binary)
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build lockbench: %v\n%s", err, out)
		os.Exit(1)
	}
	// Every image a test may need is built here, once: tests that run
	// side by side would otherwise each start the same build.
	flag.Parse()
	if !testing.Short() {
		images := exec.Command(binary, "images", "build", "--jvm", "--postgres")
		if out, err := images.CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "build images: %v\n%s", err, out)
			os.Exit(1)
		}
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// side runs a subtest beside its siblings, two at a time on two cores
// (go test's -parallel). Only runs whose verdict does not hang on how
// fast the machine is go side by side: no-fault runs, and fault runs with
// a long time limit and a fault as long as they choose. Timing cases
// (power loss, ZooKeeper's JVMs, the known-broken clients, PostgreSQL's
// pause aimed between choice and SIGSTOP) run alone.
func side(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("end-to-end: starts containers")
	}
	t.Parallel()
}

type result struct {
	exit           int
	stdout, stderr string
	runID, dir     string
}

var (
	runLine = regexp.MustCompile(`run ([0-9a-f]+): \S+, seed -?\d+, results in (\S+)`)
)

// lockbench runs the binary with args and a results tree in a temporary
// directory, and returns what it printed and where its run went.
func lockbench(t *testing.T, env []string, args ...string) result {
	t.Helper()
	if testing.Short() {
		t.Skip("end-to-end: starts containers")
	}
	r := runBinary(t, 5*time.Minute, env, append(args, "--results", t.TempDir())...)
	if m := runLine.FindStringSubmatch(r.stdout); m != nil {
		r.runID, r.dir = m[1], m[2]
	}
	return r
}

// runBinary runs the binary with args (and env besides the test's own)
// for at most timeout, and returns what it printed and its exit code.
func runBinary(t *testing.T, timeout time.Duration, env []string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, args...)
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := result{stdout: stdout.String(), stderr: stderr.String()}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		r.exit = ee.ExitCode()
	default:
		t.Fatalf("lockbench %v: %v", args, err)
	}
	t.Logf("lockbench %s → exit %d\n%s%s", strings.Join(args, " "), r.exit, r.stdout, r.stderr)
	return r
}

// mustCatch runs lockbench with args for a run that must be judged invalid,
// and once more with seed+1 when the first is judged valid: whether a
// fault struck at a random moment finds the holder where it can do harm
// is timing the harness does not command, so such a test asserts a catch
// within two runs (the rate over many is the matrix's to measure). Each
// run must leave nothing behind. args must not name --seed.
func mustCatch(t *testing.T, env []string, seed int, args ...string) result {
	t.Helper()
	return catchWithin2(t, seed, func(args ...string) result {
		r := lockbench(t, env, args...)
		assertNothingLeft(t, r.runID)
		return r
	}, args...)
}

// catchWithin2 is mustCatch with the run made by run, given args and a
// --seed.
func catchWithin2(t *testing.T, seed int, run func(args ...string) result, args ...string) result {
	t.Helper()
	r := run(append(args, "--seed", strconv.Itoa(seed))...)
	if r.exit == 0 {
		t.Logf("judged valid with seed %d; once more with seed %d", seed, seed+1)
		r = run(append(args, "--seed", strconv.Itoa(seed+1))...)
	}
	return r
}

// assertNothingLeft fails if any container or network of the run remains.
func assertNothingLeft(t *testing.T, runID string) {
	t.Helper()
	if runID == "" {
		t.Fatal("no run id printed")
	}
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	f := filters.NewArgs(filters.Arg("label", "lockbench="+runID))
	ctx := context.Background()
	cs, err := cli.ContainerList(ctx, container.ListOptions{All: true, Filters: f})
	if err != nil {
		t.Fatal(err)
	}
	ns, err := cli.NetworkList(ctx, network.ListOptions{Filters: f})
	if err != nil {
		t.Fatal(err)
	}
	if len(cs)+len(ns) > 0 {
		t.Errorf("run %s left %d containers and %d networks behind", runID, len(cs), len(ns))
	}
}

// readJSON decodes one of a run's JSON files.
func readJSON[T any](t *testing.T, dir, file string) T {
	t.Helper()
	var v T
	data, err := os.ReadFile(filepath.Join(dir, file))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

func readReport(t *testing.T, dir string) rundir.Results {
	t.Helper()
	return readJSON[rundir.Results](t, dir, rundir.ResultsFile)
}

func checker(t *testing.T, rep rundir.Results, name string) checkers.Result {
	t.Helper()
	for _, r := range rep.Checkers {
		if r.Checker == name {
			return r
		}
	}
	t.Fatalf("no %s result in %s", name, rundir.ResultsFile)
	return checkers.Result{}
}

// pausedClients lists the clients the nemesis froze, from the history.
func pausedClients(t *testing.T, dir string) map[string]bool {
	t.Helper()
	events, err := history.DecodeFile(filepath.Join(dir, rundir.HistoryFile))
	if err != nil {
		t.Fatal(err)
	}
	paused := map[string]bool{}
	for _, e := range events {
		if e.Process == history.Nemesis && e.F == history.Start && e.Type == history.Info && e.Fault == "pause" {
			for _, c := range e.Targets {
				paused[c] = true
			}
		}
	}
	return paused
}

// staleWindows checks that the exclusion checker held and reported the
// stale windows the pauses opened, each with its bounds, credited to a
// fault that hit a holder, and drawn on report.html; it returns them.
func staleWindows(t *testing.T, dir string) []checkers.Window {
	t.Helper()
	ex := checker(t, readReport(t, dir), "exclusion")
	if ex.Valid != checkers.Valid {
		t.Fatalf("exclusion: %s (%s), want valid: a pause breaks no promise of the lock", ex.Valid, ex.Summary)
	}
	// A window can also open without a fault: on a loaded machine a grant
	// can take a whole TTL to reach its client. Such windows are told like
	// the others but belong to no fault.
	var stale []checkers.Window
	var byFaults int64
	for _, w := range ex.Windows {
		if w.Kind != "stale-belief" {
			continue
		}
		stale = append(stale, w)
		// A lock with no TTL tells the last statement that proved its
		// session alive instead of a lease's expiry.
		told := strings.Contains(w.Message, "valid at least until") || strings.Contains(w.Message, "last proved alive by a statement")
		if w.From >= w.To || !told {
			t.Errorf("stale window %+v: want bounds and the lease's expiry told", w)
		}
		if w.Fault >= 0 {
			byFaults++
		} else {
			t.Logf("a stale window no fault opened: %s", w.Message)
		}
	}
	if byFaults == 0 || ex.Counts["stale_beliefs"] != int64(len(stale)) {
		t.Fatalf("stale windows %+v, counts %v: the pauses opened none", ex.Windows, ex.Counts)
	}
	var opened int64
	for _, f := range ex.Faults {
		opened += f.StaleWindows
		if f.StaleWindows > 0 && !f.HitHolder {
			t.Errorf("fault %+v opened a window but is not said to have hit a holder", f)
		}
	}
	if opened != byFaults {
		t.Errorf("faults opened %d windows, the checker attributes %d to them", opened, byFaults)
	}
	page, err := os.ReadFile(filepath.Join(dir, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"stale-belief-window", "TTL sizing", "renewal round trip", "fault-efficacy"} {
		if !strings.Contains(string(page), want) {
			t.Errorf("report.html has no %q", want)
		}
	}
	return stale
}

// verdictExit is the exit status of each verdict, as Jepsen's.
var verdictExit = map[checkers.Verdict]int{checkers.Valid: 0, checkers.Invalid: 1, checkers.Unknown: 2}

// recheck runs `lockbench check` on the stored run and compares verdicts;
// check must exit with the status of its verdict.
func recheck(t *testing.T, dir string, want checkers.Verdict) {
	t.Helper()
	before := readReport(t, dir)
	cmd := exec.Command(binary, "check", dir)
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	switch code := cmd.ProcessState.ExitCode(); {
	case err != nil && !errors.As(err, &exit):
		t.Fatalf("check did not run: %v", err)
	case code != verdictExit[want]:
		t.Errorf("check exited %d, want %d (%s)\n%s", code, verdictExit[want], want, out)
	}
	after := readReport(t, dir)
	if after.Verdict != want || before.Verdict != want {
		t.Errorf("check: run said %s, check says %s, want %s\n%s", before.Verdict, after.Verdict, want, out)
	}
	for i := range before.Checkers {
		if before.Checkers[i].Valid != after.Checkers[i].Valid {
			t.Errorf("check: %s was %s in the run, %s on re-check", before.Checkers[i].Checker, before.Checkers[i].Valid, after.Checkers[i].Valid)
		}
	}
}

// The failure lockbench exists to show: a client paused past its lease
// writes with a stale token and, without a fence, the store takes it.
func TestPauseWithoutFenceLosesUpdates(t *testing.T) {
	r := mustCatch(t, nil, 7, "run", "--backend", "redis", "--nemesis", "pause", "--fence", "none", "--time-limit", "20s")
	if r.exit != 1 {
		t.Fatalf("exit %d, want 1 (invalid)", r.exit)
	}
	rep := readReport(t, r.dir)
	paused := pausedClients(t, r.dir)
	if len(paused) == 0 {
		t.Fatal("the nemesis paused nobody")
	}
	fence := checker(t, rep, "fence")
	if fence.Valid != checkers.Invalid {
		t.Fatalf("fence: %s, want invalid", fence.Valid)
	}
	stale := 0
	for _, a := range fence.Anomalies {
		if a.Kind != "stale-write-accepted" {
			continue
		}
		stale++
		if len(a.Clients) == 0 || !paused[a.Clients[0]] {
			t.Errorf("stale writer %v was never paused (paused: %v): %s", a.Clients, paused, a.Message)
		}
		if len(a.Tokens) < 2 || a.Tokens[0] >= a.Tokens[1] {
			t.Errorf("stale write should name its token and the newer one: %v", a.Tokens)
		}
	}
	if stale == 0 {
		t.Error("no stale-write-accepted anomaly")
	}
	checkDamage(t, r.dir, checker(t, rep, "lost-updates"), fence)
	if lin := checker(t, rep, "linearizable"); lin.Valid != checkers.Invalid {
		t.Errorf("linearizable: %s, want invalid", lin.Valid)
	}
	// The lock kept its promise; the paused holders outlived their leases
	// and wrote inside the windows that opened.
	var writes int64
	for _, w := range staleWindows(t, r.dir) {
		writes += w.Writes
	}
	if writes == 0 {
		t.Error("no write was attempted inside a stale window, yet a stale write was accepted")
	}
	if !strings.Contains(r.stdout, "stale-write-accepted") || !strings.Contains(r.stdout, "verdict: invalid") {
		t.Error("the printed verdict does not name the stale write")
	}
	for _, f := range []string{"report.html", "linear.html"} {
		if info, err := os.Stat(filepath.Join(r.dir, f)); err != nil || info.Size() == 0 {
			t.Errorf("%s not written: %v", f, err)
		}
	}
	md, err := os.ReadFile(filepath.Join(r.dir, "anomalies.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range fence.Anomalies {
		if a.Kind == "stale-write-accepted" {
			for _, want := range []string{a.Clients[0], fmt.Sprintf("token %d", a.Tokens[0]), fmt.Sprintf("token %d", a.Tokens[1]), "paused by the nemesis", "```mermaid"} {
				if !strings.Contains(string(md), want) {
					t.Errorf("anomalies.md does not mention %q (the run's notes: %q)", want, readReport(t, r.dir).Notes)
				}
			}
			break
		}
	}
	recheck(t, r.dir, checkers.Invalid)
}

// With the store checking tokens on reads and writes, pauses are harmless:
// the stale writes are rejected and logged as such. The pauses strike at
// failpoint section (the value read, the write ahead), so that each
// thawed holder has a stale write to send: a pause that falls after a
// holder's write leaves it nothing to be rejected.
func TestPauseWithFenceIsSafe(t *testing.T) {
	r := lockbench(t, nil, "run", "--backend", "redis", "--nemesis", "pause", "--failpoint", "section", "--fence", "all", "--time-limit", "20s", "--seed", "7")
	defer assertNothingLeft(t, r.runID)
	if r.exit != 0 {
		t.Fatalf("exit %d, want 0 (valid)", r.exit)
	}
	if len(pausedClients(t, r.dir)) == 0 {
		t.Fatal("the nemesis paused nobody")
	}
	log, err := store.ReadLogFile(filepath.Join(r.dir, rundir.StoreFile))
	if err != nil {
		t.Fatal(err)
	}
	rejected := 0
	for _, e := range log {
		if e.Outcome == store.Rejected {
			rejected++
			if e.Token >= e.MaxToken {
				t.Errorf("store rejected token %d though the highest seen was %d", e.Token, e.MaxToken)
			}
		}
	}
	if rejected == 0 {
		t.Error("no stale request was rejected: the pauses never produced a stale holder")
	}
	staleWindows(t, r.dir)
	if rep := readReport(t, r.dir); rep.Evidence != "" {
		t.Errorf("evidence %q: the pauses did reach holders", rep.Evidence)
	}
	recheck(t, r.dir, checkers.Valid)
}

func TestNoFaultsIsValid(t *testing.T) {
	for _, fence := range []string{"none", "all"} {
		t.Run("fence-"+fence, func(t *testing.T) {
			side(t)
			r := lockbench(t, nil, "run", "--backend", "redis", "--nemesis", "none", "--fence", fence, "--time-limit", "8s")
			defer assertNothingLeft(t, r.runID)
			if r.exit != 0 {
				t.Fatalf("exit %d, want 0", r.exit)
			}
			rep := readReport(t, r.dir)
			if n := checker(t, rep, "lost-updates").Counts["acknowledged"]; n < 20 {
				t.Errorf("only %d acknowledged writes in 8 s: the workload barely ran", n)
			}
		})
	}
}

func TestBadInput(t *testing.T) {
	cases := []struct {
		name string
		env  []string
		args []string
		exit int
		want string
	}{
		{"unknown backend", nil, []string{"run", "--backend", "memcached"}, 254, "unknown backend"},
		{"negative ttl", nil, []string{"run", "--ttl", "-2s"}, 254, "--ttl"},
		{"unknown flag", nil, []string{"run", "--frobnicate"}, 254, "unknown flag"},
		{"bad fence", nil, []string{"run", "--fence", "some"}, 254, "fence"},
		{"unknown variant", nil, []string{"run", "--backend", "etcd", "--variant", "setnx-expire"}, 254, "no client variant"},
		{"work twice", nil, []string{"run", "--work", "fixed:1s", "--work-max", "2s"}, 254, "--work-max"},
		{"bad work", nil, []string{"run", "--work", "tail:0-1s,1/0,3s"}, 254, "--work"},
		{"bad think", nil, []string{"run", "--think", "uniform:1s-500ms"}, 254, "--think"},
		{"idle failpoint", nil, []string{"run", "--failpoint", "acquired", "--nemesis", "kill"}, 254, "needs a fault"},
		{"bad on-lock-error", nil, []string{"run", "--on-lock-error", "ajar"}, 254, "--on-lock-error"},
		{"unknown preset", nil, []string{"matrix", "--preset", "everything"}, 254, "--preset"},
		{"unknown combined fault", nil, []string{"run", "--nemesis", "pause+wobble"}, 254, `unknown nemesis "wobble"`},
		{"fault twice in a combination", nil, []string{"run", "--nemesis", "pause+pause"}, 254, "asked for twice"},
		{"unknown fault in a matrix cell", nil, []string{"matrix", "--nemeses", "none,pause+wobble"}, 254, `unknown value "wobble"`},
		{"reply-lost where no reply is held", nil, []string{"run", "--backend", "redis", "--nemesis", "reply-lost"}, 254, "never reach failpoint reply-held"},
		{"docker unreachable", []string{"DOCKER_HOST=unix:///nonexistent/docker.sock"}, []string{"run", "--time-limit", "5s"}, 255, "docker engine not reachable"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := lockbench(t, c.env, c.args...)
			if r.exit != c.exit {
				t.Errorf("exit %d, want %d", r.exit, c.exit)
			}
			lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
			if len(lines) != 1 || !strings.Contains(lines[0], c.want) {
				t.Errorf("want one line mentioning %q on stderr, got %q", c.want, r.stderr)
			}
			if strings.Contains(r.stderr, "goroutine") {
				t.Error("stack trace on stderr")
			}
			if r.runID != "" {
				t.Errorf("a run %s started", r.runID)
			}
		})
	}
}

// readRun reads a run's history and the store's log, as they were written.
func readRun(t *testing.T, dir string) ([]history.Event, []store.Entry) {
	t.Helper()
	events, err := history.DecodeFile(filepath.Join(dir, rundir.HistoryFile))
	if err != nil {
		t.Fatal(err)
	}
	log, err := store.ReadLogFile(filepath.Join(dir, rundir.StoreFile))
	if err != nil {
		t.Fatal(err)
	}
	return events, log
}

// checkDamage holds the lost-updates checker's numbers to the run's own
// files, worked out here the plain way: missing is acknowledged plus
// applied-with-unknown-outcome minus final, and the lost acknowledged
// writes are those outside the final value's ancestry, where each write
// descends from the last write before its writer's read in store.log.
// When a later write restored every regression, the writes lost are
// exactly the stale writers' own.
func checkDamage(t *testing.T, dir string, lost, fence checkers.Result) {
	t.Helper()
	events, log := readRun(t, dir)
	outcome := map[string]history.Type{} // write req -> ok, fail or info
	readOf := map[string]string{}        // write req -> its section's read
	lastRead := map[string]string{}
	for _, e := range events {
		switch {
		case e.F == history.Read && e.Type == history.Invoke:
			lastRead[e.Process] = e.Req
		case e.F == history.Write && e.Type == history.Invoke:
			outcome[e.Req], readOf[e.Req] = history.Info, lastRead[e.Process]
		case e.F == history.Write:
			outcome[e.Req] = e.Type
		}
	}
	var acked, applied, final int64
	for _, typ := range outcome {
		if typ == history.OK {
			acked++
		}
	}
	latest := map[string]string{} // read req -> the write it returned
	parent := map[string]string{}
	var writes []store.Entry
	cur := ""
	for _, e := range log {
		if e.Outcome != store.Accepted {
			continue
		}
		if e.Op == "read" {
			latest[e.Req] = cur
			continue
		}
		parent[e.Req], cur, final = latest[readOf[e.Req]], e.Req, e.Value
		writes = append(writes, e)
		if outcome[e.Req] == history.Info {
			applied++
		}
	}
	if want := acked + applied - final; lost.Counts["missing"] != want {
		t.Errorf("missing = %d, want %d = %d acknowledged + %d applied unknown - final %d", lost.Counts["missing"], want, acked, applied, final)
	}
	kept := map[string]bool{}
	for req := cur; req != ""; req = parent[req] {
		kept[req] = true
	}
	want := map[int64]bool{}
	for _, w := range writes {
		if !kept[w.Req] && outcome[w.Req] == history.OK {
			want[w.Seq] = true
		}
	}
	got := map[int64]bool{}
	for _, a := range lost.Anomalies {
		if a.Kind == "lost-update" {
			got[a.StoreSeqs[0]] = true
		}
	}
	if int64(len(want)) != lost.Counts["lost_acknowledged"] || !reflect.DeepEqual(got, want) {
		t.Errorf("lost acknowledged writes (store seqs) %v, %d counted; want %v", got, lost.Counts["lost_acknowledged"], want)
	}
	if lost.Valid != checkers.Invalid || len(want) == 0 {
		t.Errorf("lost-updates: %s with counts %v, want invalid with acknowledged increments lost", lost.Valid, lost.Counts)
	}
	stale := map[int64]bool{}
	for _, a := range fence.Anomalies {
		if a.Kind == "stale-write-accepted" {
			stale[a.StoreSeqs[0]] = true
		}
	}
	if lost.Counts["regressions_repaired"] == lost.Counts["regressions"] && !reflect.DeepEqual(got, stale) {
		t.Errorf("every regression was repaired, so the lost writes %v should be the stale writes %v", got, stale)
	}
	t.Logf("final %d, %d acknowledged, %d applied unknown, missing %d, lost %v, stale writes %v, regressions %d (%d repaired)",
		final, acked, applied, lost.Counts["missing"], got, stale, lost.Counts["regressions"], lost.Counts["regressions_repaired"])
}
