package verdict

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lockbench/lockbench/checkers"
	"github.com/lockbench/lockbench/rundir"
)

// A set run whose history adds an element twice is refused as malformed
// (exit 254), naming both adds, before anything is judged; its twin, whose
// timed-out add is of a new element, is judged, and invalid.
func TestCheckRefusesARepeatedSetElement(t *testing.T) {
	test, err := os.ReadFile(filepath.Join("..", "report", "testdata", "valid", rundir.TestFile))
	if err != nil {
		t.Fatal(err)
	}
	set := bytes.Replace(test, []byte(`"workload": "counter"`), []byte(`"workload": "set"`), 1)
	if bytes.Equal(set, test) {
		t.Fatal("the test.json names no counter workload to replace")
	}
	check := func(golden string) (*rundir.Results, error) {
		dir := t.TempDir()
		for _, name := range []string{rundir.HistoryFile, rundir.StoreFile} {
			data, err := os.ReadFile(filepath.Join("..", "checkers", "testdata", golden, name))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(dir, rundir.TestFile), set, 0o644); err != nil {
			t.Fatal(err)
		}
		rep, err := Check(dir, testOptions)
		if err == nil {
			if _, statErr := os.Stat(filepath.Join(dir, rundir.ResultsFile)); statErr != nil {
				t.Errorf("judged, but no results: %v", statErr)
			}
		}
		return rep, err
	}
	_, err = check("set-element-repeated")
	if !IsBadInput(err) || !strings.Contains(err.Error(), "element 1000000001 is added twice, by c1 at event 8 and by c1 at event 20") {
		t.Errorf("repeated element: %v, want bad input naming both adds", err)
	}
	rep, err := check("set-element-distinct")
	if err != nil {
		t.Fatal(err)
	}
	if rep.Verdict != checkers.Invalid {
		t.Errorf("distinct elements judged %s, want invalid", rep.Verdict)
	}
	i := slices.IndexFunc(rep.Checkers, func(r checkers.Result) bool { return r.Checker == (checkers.LostElements{}).Name() })
	if i < 0 || rep.Checkers[i].Valid != checkers.Invalid || rep.Checkers[i].Counts["lost"] != 1 {
		t.Errorf("checkers %+v, want lost-elements invalid with 1 lost", rep.Checkers)
	}
}
