package checkers

import (
	"os"
	"path/filepath"
	"testing"
)

// TestAnomalyKindsDeclared: every anomaly and window the checkers find on
// the golden histories is of a kind they declare, and no two kinds share
// a name; a name this build does not know (a results.json from another)
// is told as a grant's incident.
func TestAnomalyKindsDeclared(t *testing.T) {
	names := map[string]bool{}
	for _, k := range AnomalyKinds() {
		if names[k.Name] || k.About == "" {
			t.Errorf("kind %+v repeats a name or says nothing", k)
		}
		names[k.Name] = true
	}
	dirs, err := filepath.Glob(filepath.Join("testdata", "*", "history.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, p := range dirs {
		name := filepath.Base(filepath.Dir(p))
		if _, err := os.Stat(filepath.Join("testdata", name, "store.log")); err != nil {
			continue
		}
		in := load(t, name)
		for _, l := range []Lease{redisLease, pgLease, {TTL: 1e9}} {
			in.Lease = l
			for _, r := range checkAll(in) {
				for _, a := range r.Anomalies {
					seen[a.Kind] = true
					if !names[a.Kind] {
						t.Errorf("%s: %s found an anomaly of undeclared kind %q", name, r.Checker, a.Kind)
					}
				}
				for _, w := range r.Windows {
					if k := w.KindOf(); k.About == "" {
						t.Errorf("%s: a window of undeclared kind %q", name, w.Kind)
					}
				}
			}
		}
	}
	for _, k := range []AnomalyKind{NonLinearizable, StaleWriteAccepted, LostUpdate, Regression, TwoHoldersKind, Deadlock} {
		if !seen[k.Name] {
			t.Errorf("no golden history shows a %s anomaly", k.Name)
		}
	}
	if k := KindOf("from-another-build"); k.Story != StoryGrant || k.Name != "from-another-build" {
		t.Errorf("unknown kind = %+v", k)
	}
}
