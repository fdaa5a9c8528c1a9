package matrix

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/lockbench/lockbench/catalog"
	"github.com/lockbench/lockbench/checkers"
	"github.com/lockbench/lockbench/config"
)

var updateFixture = flag.Bool("update-fixture", false, "write testdata/measured again (the derived file is never written by the test)")

// The fixture's revisions: two compatible, one not.
var fixtureCompatible = func(rev string) bool { return rev == "v1 revision aaaa" || rev == "v1 revision bbbb" }

// fixtureCells are the measured fixture's cells, each with its runs'
// verdicts in seed order (i invalid, v valid, u unknown).
var fixtureCells = []struct {
	cell    Cell
	runs    string
	comment string
}{
	{Cell{Backend: "cas", Workload: "counter", Nemesis: "none", Fence: "none", Store: "lockbench"}, "vvvvvvvvvv", "valid: 0/10"},
	{Cell{Backend: "redis", Workload: "counter", Nemesis: "pause", Fence: "none", Store: "lockbench"}, "iiiiiiiiiiiiii", "invalid: 14/14, R 3"},
	{Cell{Backend: "redis", Workload: "counter", Nemesis: "pause", Fence: "writes", Store: "lockbench"}, "ivvivvvvvivvvvvvivvvvvvvivvvvv", "either: 5/30 at max-runs"},
	{Cell{Backend: "etcd", Workload: "counter", Nemesis: "none", Fence: "none", Store: "lockbench"}, "vvvvi", "finding: 1/5 where valid is expected"},
	{Cell{Backend: "zookeeper", Workload: "counter", Nemesis: "pause", Fence: "none", Store: "lockbench"}, "vvvvvvvvvv", "valid: 0/10, contradicting its rule (invalid)"},
	{Cell{Backend: "redis", Workload: "counter", Nemesis: "pause", Fence: "all", Store: "lockbench"}, "vvvu", "open: 3/4 judged"},
}

// writeFixture writes testdata/measured: the fixture's runs, plus for the
// cas cell a run of an incompatible revision, an interrupted run and a
// seed run twice, none of which may change its class.
func writeFixture(t *testing.T, dir string) {
	t.Helper()
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	base := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	n := 0
	line := func(c Cell, seed int64, v checkers.Verdict, rev string, interrupted bool) {
		n++
		spec, _ := json.Marshal(c)
		cfg := c.config(shardBase)
		cfg.Seed = seed
		start := base.Add(time.Duration(n) * time.Minute)
		m := catalog.Measured{RunID: fmt.Sprintf("%08x", n), Start: start, Seed: seed, Cell: c.Name(), Flags: FlagsOf(c, shardBase),
			CellSpec: spec, Name: cfg.TestName(), Revision: rev, Checked: start.Add(30 * time.Second), Verdict: v, Interrupted: interrupted,
			Config: cfg, Versions: map[string]string{"lockbench": rev}}
		if err := catalog.AppendMeasured(catalog.MeasuredPath(dir, c.Name()), m); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range fixtureCells {
		first := SeedOf(7, f.cell)
		for i, r := range f.runs {
			v := map[rune]checkers.Verdict{'i': checkers.Invalid, 'v': checkers.Valid, 'u': checkers.Unknown}[r]
			rev := "v1 revision aaaa"
			if i%2 == 1 {
				rev = "v1 revision bbbb"
			}
			line(f.cell, first+int64(i), v, rev, false)
		}
	}
	cas := fixtureCells[0].cell
	first := SeedOf(7, cas)
	line(cas, first+20, checkers.Invalid, "v0 revision dead", false)
	line(cas, first+21, checkers.Invalid, "v1 revision aaaa", true)
	line(cas, first+3, checkers.Valid, "v1 revision bbbb", false)
}

// TestDeriveReproducesTheFixture: derive over the committed measured
// fixture gives the committed expectations fixture byte for byte, and
// deriving again changes nothing.
func TestDeriveReproducesTheFixture(t *testing.T) {
	measured := filepath.Join("testdata", "measured")
	if *updateFixture {
		writeFixture(t, measured)
	}
	in, err := os.ReadFile(filepath.Join("testdata", "expectations-rules.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(filepath.Join("testdata", "expectations-derived.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	exp, err := LoadExpectations(filepath.Join("testdata", "expectations-rules.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	cat, err := catalog.Open(filepath.Join(t.TempDir(), catalog.File))
	if err != nil {
		t.Fatal(err)
	}
	defer cat.Close()
	if _, _, err := cat.Import(measured); err != nil {
		t.Fatal(err)
	}
	d, err := Derive(cat, exp, DefaultStopRule, fixtureCompatible, "")
	if err != nil {
		t.Fatal(err)
	}
	got, err := WithMeasured(in, d.Measured)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("derived:\n%s\nwant (testdata/expectations-derived.yaml):\n%s", got, want)
	}
	again, err := WithMeasured(got, d.Measured)
	if err != nil || !bytes.Equal(again, got) {
		t.Errorf("deriving again changed the file (%v)", err)
	}
	var contra, open []string
	for _, c := range d.Contradictions {
		contra = append(contra, c.Cell)
	}
	for _, c := range d.Open {
		open = append(open, c.Cell)
	}
	if fmt.Sprint(contra) != "[etcd/counter/none/fence-none zookeeper/counter/pause/fence-none]" {
		t.Errorf("contradictions %v", contra)
	}
	if fmt.Sprint(open) != "[redis/counter/pause/fence-all]" {
		t.Errorf("open %v", open)
	}
	// The derived file loads, and under the fixture's flags its measured
	// classes are the cells' expectations, the invalid one with its R.
	path := filepath.Join(t.TempDir(), "expectations.yaml")
	if err := os.WriteFile(path, got, 0o644); err != nil {
		t.Fatal(err)
	}
	e2, err := LoadExpectations(path)
	if err != nil {
		t.Fatal(err)
	}
	e2.Under(shardBase)
	pause := fixtureCells[1].cell
	if x, _ := e2.For(pause); x != ExpectInvalid || e2.CIRuns(pause) != 3 {
		t.Errorf("the pause cell expects %s with %d CI runs", x, e2.CIRuns(pause))
	}
	if x, _ := e2.For(fixtureCells[4].cell); x != ExpectValid {
		t.Errorf("the zookeeper cell, measured valid, expects %s", x)
	}
	// A finding keeps its rule's expectation.
	if x, _ := e2.For(fixtureCells[3].cell); x != ExpectValid {
		t.Errorf("the finding expects %s", x)
	}
	// Under other flags, the rules alone.
	other := shardBase
	other.TimeLimit = config.Duration(time.Minute)
	e2.Under(other)
	if x, _ := e2.For(fixtureCells[4].cell); x != ExpectInvalid || e2.CIRuns(pause) != 0 {
		t.Errorf("under other flags the zookeeper cell expects %s, the pause cell %d CI runs", x, e2.CIRuns(pause))
	}
}
