package catalog

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockbench/lockbench/checkers"
	"github.com/lockbench/lockbench/config"
	"github.com/lockbench/lockbench/metrics"
	"github.com/lockbench/lockbench/rundir"
	"github.com/lockbench/lockbench/store"
)

// cell is a group's configuration in these tests: redis under a pause,
// fence none (which the matrix expects invalid) unless fence says other.
type cell struct {
	fence string
	host  string // "" for a run recorded without a host class
	// samples uncontended acquires of acquireMs each
	samples   int
	acquireMs float64
	revision  string
}

var seq int

// record records invalid invalid runs and valid valid runs of cell c,
// with crafted verdicts and metrics: the comparison reads only what the
// catalog keeps, so no history needs judging.
func record(t *testing.T, cat *Catalog, c cell, invalid, valid int) {
	t.Helper()
	for i := range invalid + valid {
		seq++
		v := checkers.Valid
		if i < invalid {
			v = checkers.Invalid
		}
		cfg := config.Config{Backend: "redis", Workload: "register", Nemesis: []string{"pause"}, Fence: store.Fence(c.fence),
			Store: config.DefaultStore, Variant: config.Correct, Seed: int64(seq), Concurrency: 3}
		test := rundir.Test{Name: "t", RunID: fmt.Sprintf("run-%d", seq), Start: time.Unix(int64(seq), 0), Config: cfg}
		if c.host != "" {
			test.HostClass = &rundir.HostClass{Cores: 4, Engine: c.host, StorageDriver: "overlay2"}
		}
		var m metrics.Run
		for range c.samples {
			m.AcquireUncontended.Add(c.acquireMs, false)
		}
		rev := c.revision
		if rev == "" {
			rev = "v0.0.0 revision 0000000000000000000000000000000000000000"
		}
		e := Entry{Test: test, Dir: fmt.Sprintf("/runs/%d", seq), Metrics: m,
			Results: rundir.Results{Lockbench: rev, Verdict: v, Checked: time.Unix(int64(seq), 0)}}
		if err := cat.Record(e); err != nil {
			t.Fatal(err)
		}
	}
}

func openTemp(t *testing.T) *Catalog {
	t.Helper()
	c, err := Open(filepath.Join(t.TempDir(), File))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// expectPauseNone stands in for the matrix: redis under a pause without a
// fence is expected invalid, everything else valid.
func expectPauseNone(k map[string]string) string {
	if k["nemesis"] == "pause" && k["fence"] == "none" {
		return "invalid"
	}
	return "valid"
}

func diff(t *testing.T, now, base *Catalog, factor float64) Diff {
	t.Helper()
	d, err := AgainstBaseline(now, Query{}, base, Query{}, BaselineOptions{LatencyFactor: factor, Expect: expectPauseNone})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func kinds(d Diff) string {
	var ks []string
	for _, c := range d.Changes {
		ks = append(ks, c.Key["fence"]+":"+c.Kind)
	}
	return strings.Join(ks, ",")
}

// TestDetection: Wilson 95 % of 9/10 is [0.596, 0.982] and of 1/10
// [0.018, 0.404]: they do not overlap, a detection change. 6/10 is
// [0.313, 0.832] and 4/10 [0.168, 0.687]: they overlap, no change. A
// group the matrix expects valid loses no detection, whatever its rates.
func TestDetection(t *testing.T) {
	for _, c := range []struct {
		name                string
		fence               string
		baseInvalid, nowInv int
		want                string
		baseLo, baseHi      float64
		nowLo, nowHi        float64
		checkInterval       bool
	}{
		{"9/10 to 1/10", "none", 9, 1, "none:detection", 0.5958, 0.9821, 0.0179, 0.4042, true},
		{"6/10 to 4/10", "none", 6, 4, "", 0.3127, 0.8318, 0.1682, 0.6873, true},
		{"expected valid", "all", 9, 1, "", 0, 0, 0, 0, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			base, now := openTemp(t), openTemp(t)
			record(t, base, cell{fence: c.fence}, c.baseInvalid, 10-c.baseInvalid)
			record(t, now, cell{fence: c.fence}, c.nowInv, 10-c.nowInv)
			d := diff(t, now, base, 0)
			if got := kinds(d); got != c.want {
				t.Fatalf("changes %q, want %q (%+v)", got, c.want, d.Changes)
			}
			if !c.checkInterval || len(d.Changes) == 0 {
				return
			}
			ch := d.Changes[0]
			for _, x := range []struct{ got, want float64 }{
				{ch.Baseline.InvalidInterval[0], c.baseLo}, {ch.Baseline.InvalidInterval[1], c.baseHi},
				{ch.Now.InvalidInterval[0], c.nowLo}, {ch.Now.InvalidInterval[1], c.nowHi},
			} {
				if d := x.got - x.want; d > 5e-5 || d < -5e-5 {
					t.Errorf("interval bound %.4f, want %.4f", x.got, x.want)
				}
			}
			if ch.Baseline.Invalid != 9 || ch.Now.Invalid != 1 || !strings.Contains(ch.Message, "9/10 [0.60, 0.98] to 1/10 [0.02, 0.40]") {
				t.Errorf("change %+v", ch)
			}
		})
	}
}

// TestNewInvalid: one invalid run in five, where the baseline had none
// in ten, is news; where it had none in nine, it is not (too few to
// say the group never finds one). It is news whatever the matrix expects.
func TestNewInvalid(t *testing.T) {
	for _, c := range []struct {
		name      string
		baseValid int
		want      string
	}{
		{"0/10 then 1/5", 10, "all:new-invalid"},
		{"0/9 then 1/5", 9, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			base, now := openTemp(t), openTemp(t)
			record(t, base, cell{fence: "all"}, 0, c.baseValid)
			record(t, now, cell{fence: "all"}, 1, 4)
			d := diff(t, now, base, 0)
			if got := kinds(d); got != c.want {
				t.Fatalf("changes %q, want %q (%+v)", got, c.want, d.Changes)
			}
			if c.want != "" && (d.Changes[0].Now.Invalid != 1 || d.Changes[0].Now.Runs != 5 || d.Changes[0].Baseline.Runs != 10) {
				t.Errorf("change %+v", d.Changes[0])
			}
		})
	}
}

// TestLatency: each side is one run of n samples of one value; its p99
// is the upper edge of that value's bucket, so 1 ms against 2 ms is
// twice, more than 1.5 times, and 1 ms against 1.4 ms is not. 199
// samples on one side, a host class on one side only, and a run with no
// host class are not comparable, and no change.
func TestLatency(t *testing.T) {
	for _, c := range []struct {
		name               string
		baseHost, nowHost  string
		baseN, nowN        int
		baseMs, nowMs      float64
		want, incomparable string
	}{
		{"twice as slow", "docker-27", "docker-27", 200, 200, 1, 2, "none:latency", ""},
		{"1.4 times", "docker-27", "docker-27", 200, 200, 1, 1.4, "", ""},
		{"199 samples", "docker-27", "docker-27", 200, 199, 1, 2, "", "199 now (200 needed"},
		{"other host class", "docker-27", "docker-28", 200, 200, 1, 2, "", "no baseline run on 4 cores, engine docker-28"},
		{"no host class", "", "", 200, 200, 1, 2, "", "have no host class"},
	} {
		t.Run(c.name, func(t *testing.T) {
			base, now := openTemp(t), openTemp(t)
			record(t, base, cell{fence: "none", host: c.baseHost, samples: c.baseN, acquireMs: c.baseMs}, 1, 0)
			record(t, now, cell{fence: "none", host: c.nowHost, samples: c.nowN, acquireMs: c.nowMs}, 1, 0)
			d := diff(t, now, base, 1.5)
			if got := kinds(d); got != c.want {
				t.Fatalf("changes %q, want %q (%+v)", got, c.want, d.Changes)
			}
			if c.want != "" {
				ch := d.Changes[0]
				if ch.Now.Host == nil || *ch.Now.Host != "4 cores, engine docker-27, overlay2" ||
					ch.Baseline.AcquireUncontended.N != 200 || *ch.Now.AcquireUncontended.P99 < 2 || *ch.Baseline.AcquireUncontended.P99 > 1.1 {
					t.Errorf("change %+v", ch)
				}
			}
			switch {
			case c.incomparable == "" && len(d.Incomparable) > 0:
				t.Errorf("not comparable: %+v", d.Incomparable)
			case c.incomparable != "" && (len(d.Incomparable) != 1 || !strings.Contains(d.Incomparable[0].Reason, c.incomparable)):
				t.Errorf("not comparable %+v, want a reason with %q", d.Incomparable, c.incomparable)
			}
		})
	}
}

// TestBaselineRevision: the baseline side takes each run's judgment by
// the named revision, named by its whole version string or a prefix of
// its hash, while the current side takes the latest.
func TestBaselineRevision(t *testing.T) {
	c := openTemp(t)
	old, cur := "v0.0.0 revision aaaabbbb", "v0.0.1 revision ccccdddd"
	record(t, c, cell{fence: "none", revision: old}, 9, 1)
	// Re-judge the same runs (same keys) by the current revision: 1/10.
	seq -= 10
	record(t, c, cell{fence: "none", revision: cur}, 1, 9)
	for _, rev := range []string{old, "aaaa"} {
		d, err := AgainstBaseline(c, Query{}, c, Query{Revision: rev}, BaselineOptions{Expect: expectPauseNone})
		if err != nil {
			t.Fatal(err)
		}
		if got := kinds(d); got != "none:detection" {
			t.Errorf("--baseline-revision %s: changes %q, want a detection change (%+v)", rev, got, d.Changes)
		}
	}
	gs, err := c.Compare(Query{Revision: "ffff"})
	if err != nil || len(gs) != 0 {
		t.Errorf("revision ffff: %d groups (%v), want none", len(gs), err)
	}
}
