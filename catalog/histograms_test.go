package catalog

import (
	"path/filepath"
	"testing"

	"github.com/lockbench/lockbench/checkers/simulate"
)

// TestGroupHistograms: a group's histograms are the ones its percentiles
// come from, and changing a copy leaves the group as it was.
func TestGroupHistograms(t *testing.T) {
	root := t.TempDir()
	// One client: every acquire is alone, so uncontended.
	judgedRun(t, filepath.Join(root, "a"), simulate.Spec{Events: 2000, Clients: 1})
	c, err := Open(filepath.Join(t.TempDir(), File))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, _, err := c.Import(root); err != nil {
		t.Fatal(err)
	}
	gs, err := c.Compare(Query{By: []string{"backend"}})
	if err != nil || len(gs) != 1 {
		t.Fatalf("groups %+v, %v", gs, err)
	}
	h := gs[0].Histograms()
	for _, p := range []struct {
		name string
		n    int64
		q    Quantiles
	}{
		{"acquire wait", h.AcquireWait.N, gs[0].AcquireWait}, {"uncontended", h.AcquireUncontended.N, gs[0].AcquireUncontended},
		{"handover", h.Handover.N, gs[0].Handover}, {"renewal", h.RenewRTT.N, gs[0].RenewRTT}, {"unavailable", h.Unavailable.N, gs[0].Unavailable},
	} {
		if p.n != p.q.N {
			t.Errorf("%s: histogram of %d samples, percentiles of %d", p.name, p.n, p.q.N)
		}
	}
	if h.AcquireUncontended.N == 0 {
		t.Fatal("no uncontended acquires in a generated run")
	}
	h.AcquireUncontended.Counts[0][1] += 1000
	if again := gs[0].Histograms(); again.AcquireUncontended.Counts[0][1] == h.AcquireUncontended.Counts[0][1] {
		t.Error("changing a copy changed the group's histogram")
	}
}
