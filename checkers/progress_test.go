package checkers

import (
	"strings"
	"testing"

	"github.com/lockbench/lockbench/history"
)

// sections makes n acknowledged writes by c1, one per millisecond from t0.
func sections(n int, t0 int64) []history.Event {
	var h []history.Event
	for i := 0; i < n; i++ {
		t := t0 + int64(i)*1e6
		h = append(h,
			history.Event{Time: t, Process: "c1", Type: history.Invoke, F: history.Write},
			history.Event{Time: t + 1, Process: "c1", Type: history.OK, F: history.Write})
	}
	return h
}

func fault(t int64) history.Event {
	return history.Event{Time: t, Process: history.Nemesis, Type: history.Info, F: history.Start, Fault: "pause", Targets: []string{"c1"}}
}

func TestProgress(t *testing.T) {
	cases := []struct {
		name    string
		history []history.Event
		want    Verdict
		reason  string
	}{
		{"no faults, enough work", sections(5, 0), Valid, ""},
		{"no faults, no work", nil, Unknown, "0 critical sections completed in the whole run"},
		{"fault before the workload got going", append(sections(3, 0), fault(2e6)), Unknown, "2 critical sections completed before the first fault"},
		{"fault after enough work", append(sections(10, 0), fault(7e6)), Valid, ""},
		// A failed or unknown write is not a completed section.
		{"only failed writes", []history.Event{
			{Time: 1, Process: "c1", Type: history.Invoke, F: history.Write},
			{Time: 2, Process: "c1", Type: history.Info, F: history.Write},
		}, Unknown, "not meaningful"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := Progress{MinSections: 5}.Check(Input{History: c.history})
			if r.Valid != c.want {
				t.Fatalf("verdict %s, want %s (%s)", r.Valid, c.want, r.Summary)
			}
			if !strings.Contains(r.Reason, c.reason) {
				t.Errorf("reason %q, want it to mention %q", r.Reason, c.reason)
			}
		})
	}
}
