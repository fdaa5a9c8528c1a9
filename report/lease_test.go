package report

import (
	"encoding/json"
	"gonum.org/v1/plot/plotter"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockbench/lockbench/backends"
	"github.com/lockbench/lockbench/checkers"
	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/store"

	"github.com/lockbench/lockbench/rundir"
)

// leaseRun renders one of the exclusion checker's golden histories as a
// checked run of backend with a 2 s TTL.
func leaseRun(t *testing.T, golden, backend string) string {
	t.Helper()
	dir := filepath.Join("..", "checkers", "testdata", golden)
	h, err := history.DecodeFile(filepath.Join(dir, "history.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	log, err := store.ReadLogFile(filepath.Join(dir, "store.log"))
	if err != nil {
		t.Fatal(err)
	}
	return leasePage(t, golden, backend, h, log, "")
}

// leasePage renders a history and store log as a checked run, with the
// given verdict or, if "", the checkers'.
func leasePage(t *testing.T, name, backend string, h []history.Event, log []store.Entry, verdict checkers.Verdict) string {
	t.Helper()
	test, err := json.Marshal(map[string]any{"name": name, "config": map[string]any{"backend": backend, "ttl": "2s", "seed": 1}})
	if err != nil {
		t.Fatal(err)
	}
	b, ok := backends.Lookup(backend)
	if !ok {
		t.Fatalf("no backend %q", backend)
	}
	in := checkers.Input{History: h, Store: log, Key: "x", Lease: b.Lease(2e9)}
	var rs []checkers.Result
	for _, c := range checkers.All(0) {
		rs = append(rs, c.Check(in))
	}
	if verdict == "" {
		verdict = checkers.Overall(rs)
	}
	out := t.TempDir()
	if err := Write(out, Input{Test: test, History: h, Store: log, Results: rs, Verdict: verdict, Key: "x", Lease: in.Lease}); err != nil {
		t.Fatal(err)
	}
	return readFile(t, out, rundir.HTMLFile)
}

func TestLeaseSection(t *testing.T) {
	page := leaseRun(t, "paused-holder", "redis")
	overview := between(t, page, `id="ov-timeline"`, "</svg>")
	if !strings.Contains(overview, `class="stale-belief-window"`) {
		t.Error("the stale window is not on the overview")
	}
	if strings.Contains(overview, `data-client="c1/lease"`) {
		t.Error("the lease process has a lane of its own")
	}
	lease := between(t, page, `<section id="lease">`, "</section>")
	for _, want := range []string{
		"1 ok, 1 failed (certainly not renewed), 0 unknown",
		"lock wait", "service round trip",
		"against a TTL of 2s", "absorbs a pause of at most",
		"pause c1", "no progress after it",
		"its lease was valid at least until 3.664 s and expired by 3.671 s; c2 (token 34) acquired it at 3.700 s",
		"acquire: lock wait", "renewal round trip", "lease left when a renewal was sent",
	} {
		if !strings.Contains(lease, want) {
			t.Errorf("lease section lacks %q", want)
		}
	}

	// The story of the rejected stale write tells the window it was in.
	story := between(t, page, `<h3 class="rejection-title">`, "</ol>")
	if !strings.Contains(story, "its lease was valid at least until 3.664 s") {
		t.Errorf("the rejection's story does not tell the stale window: %s", story)
	}

	page = leaseRun(t, "two-holders", "redis")
	if !strings.Contains(between(t, page, `id="ov-timeline"`, "</svg>"), `class="two-holders-window"`) {
		t.Error("the two holders are not on the overview")
	}

	// etcd's keep-alives give margins; the acquire's recorded time is the
	// lease's proof, so the wait is not split from the round trip.
	lease = between(t, leaseRun(t, "bound-etcd", "etcd"), `<section id="lease">`, "</section>")
	if !strings.Contains(lease, "2 ok, 0 failed") || !strings.Contains(lease, "min 1333.0 ms") || strings.Contains(lease, "lock wait (acquire invoked") {
		t.Errorf("etcd lease section: %s", lease)
	}

	// A valid run whose only fault opened no window says it is weak
	// evidence where its verdict is.
	var quiet []history.Event
	for i := range 6 {
		tm, tok := int64(i)*100e6, int64(i+1)
		quiet = append(quiet,
			history.Event{Time: tm + 1e6, Process: "c1", Type: history.Invoke, F: history.Acquire},
			history.Event{Time: tm + 2e6, Process: "c1", Type: history.OK, F: history.Acquire, Token: tok, Attempt: tm + 1e6},
			history.Event{Time: tm + 3e6, Process: "c1", Type: history.Invoke, F: history.Release, Token: tok},
			history.Event{Time: tm + 4e6, Process: "c1", Type: history.OK, F: history.Release, Token: tok})
	}
	quiet = append(quiet, history.Event{Time: 700e6, Process: history.Nemesis, Type: history.Info, F: history.Start, Fault: "partition", Targets: []string{"r2"}})
	for i := range quiet {
		quiet[i].Index = int64(i)
	}
	// Its data verdicts do not matter here (it has no sections): the
	// page is drawn as if the run were valid.
	page = leasePage(t, "quiet", "redis", quiet, nil, checkers.Valid)
	if !strings.Contains(page, `id="evidence">`+checkers.WeakEvidence) {
		t.Errorf("no weak evidence next to the verdict")
	}

	lease = between(t, leaseRun(t, "two-holders", "cas"), `<section id="lease">`, "</section>")
	if !strings.Contains(lease, "No lease: cas takes no lock") {
		t.Errorf("cas lease section: %s", lease)
	}
}

// A log-scale chart of one value, or of equal values, draws: left to
// itself the plot widened such a range below zero, where a log scale
// panics, and a panic in a chart drawn on its own goroutine ended the
// process.
func TestLeasePlotsOfOneValue(t *testing.T) {
	an := analyze(Input{})
	one := plotter.XYs{{X: 1, Y: 0.5}}
	equal := plotter.XYs{{X: 1, Y: 0.001}, {X: 2, Y: 0.001}}
	svgs, err := an.leasePlots(telemetry{renewXY: one, waitXY: equal, tripXY: equal, marginXY: one})
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range svgs {
		if !strings.Contains(string(s), "<svg") {
			t.Errorf("chart %d not drawn", i)
		}
	}
}
