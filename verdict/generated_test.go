package verdict

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/lockbench/lockbench/checkers/simulate"
	"github.com/lockbench/lockbench/internal/runtest"
)

var updateGolden = flag.Bool("update", false, "rewrite the golden results of generated runs")

// judged is what a check decides about a run, without when and by which
// lockbench: the part that must not change when the check gets faster.
type judged struct {
	Verdict  string          `json:"verdict"`
	Evidence string          `json:"evidence,omitempty"`
	Events   int             `json:"events"`
	Notes    []string        `json:"notes,omitempty"`
	Checkers json.RawMessage `json:"checkers"`
}

// The check of generated runs, clean and with stale holders, on both
// workloads, gives exactly the verdicts, counts, anomalies and windows
// recorded in testdata/generated.json by the check as it was before its
// decoding was made fast (encoding/json, one line at a time). Run with
// -update to record them again after a deliberate change of a checker.
func TestCheckOfGeneratedRunsUnchanged(t *testing.T) {
	specs := []simulate.Spec{
		{Events: 2e4, Clients: 5}, {Events: 4e4, Clients: 5, Stale: true},
		{Events: 2e4, Clients: 50, Stale: true}, {Events: 1e4, Clients: 5, Set: true, Stale: true},
	}
	got := map[string]judged{}
	for _, spec := range specs {
		dir := t.TempDir()
		runtest.WriteGenerated(t, dir, spec)
		rep, err := Check(dir, testOptions)
		if err != nil {
			t.Fatal(err)
		}
		cs, err := json.Marshal(rep.Checkers)
		if err != nil {
			t.Fatal(err)
		}
		got[spec.String()] = judged{Verdict: string(rep.Verdict), Evidence: rep.Evidence, Events: rep.Events, Notes: rep.Notes, Checkers: cs}
	}
	data, err := json.MarshalIndent(got, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("testdata", "generated.json")
	if *updateGolden {
		if err := os.WriteFile(path, append(data, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var w map[string]judged
	if err := json.Unmarshal(want, &w); err != nil {
		t.Fatal(err)
	}
	for name, g := range got {
		wj, ok := w[name]
		if !ok {
			t.Errorf("%s: no golden result", name)
			continue
		}
		var gc, wc bytes.Buffer
		json.Compact(&gc, g.Checkers)
		json.Compact(&wc, wj.Checkers)
		if g.Verdict != wj.Verdict || g.Evidence != wj.Evidence || g.Events != wj.Events || !bytes.Equal(gc.Bytes(), wc.Bytes()) {
			t.Errorf("%s: judged %s (%d events) %s\nwant %s (%d events) %s", name, g.Verdict, g.Events, gc.String(), wj.Verdict, wj.Events, wc.String())
		}
	}
}
