package e2e

import (
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

type junitFile struct {
	Suites []struct {
		Tests    int `xml:"tests,attr"`
		Failures int `xml:"failures,attr"`
		Cases    []struct {
			Name    string    `xml:"name,attr"`
			Failure *struct{} `xml:"failure"`
		} `xml:"testcase"`
	} `xml:"testsuite"`
}

func readJUnit(t *testing.T, path string) junitFile {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var j junitFile
	if err := xml.Unmarshal(data, &j); err != nil {
		t.Fatal(err)
	}
	if len(j.Suites) != 1 {
		t.Fatalf("%d suites", len(j.Suites))
	}
	return j
}

// A small matrix against the default expectations: the unfenced pause cell
// must fail as the literature says, the fenced and CAS cells must hold.
func TestMatrixMeetsDefaultExpectations(t *testing.T) {
	junit := filepath.Join(t.TempDir(), "junit.xml")
	r := lockbench(t, nil, "matrix", "--backends", "redis,cas",
		"--nemeses", "none,pause", "--fences", "none,all", "--time-limit", "20s", "--seed", "31", "--junit", junit)
	if r.exit != 0 {
		t.Fatalf("exit %d, want 0", r.exit)
	}
	j := readJUnit(t, junit)
	if s := j.Suites[0]; s.Tests != 6 || s.Failures != 0 {
		t.Errorf("JUnit: %d tests, %d failures; want 6 and 0", s.Tests, s.Failures)
	}
	if !strings.Contains(r.stdout, "matrix: 6 cells") {
		t.Errorf("no wall-time line")
	}
}

// An expectation that is wrong on purpose makes the matrix fail, and the
// JUnit file names the cell.
func TestMatrixWrongExpectationFails(t *testing.T) {
	dir := t.TempDir()
	exp := filepath.Join(dir, "expectations.yaml")
	if err := os.WriteFile(exp, []byte("rules:\n  - expect: invalid\n    reason: deliberately wrong\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	junit := filepath.Join(dir, "junit.xml")
	r := lockbench(t, nil, "matrix", "--expectations", exp, "--backends", "cas", "--nemeses", "none",
		"--fences", "none", "--time-limit", "5s", "--junit", junit)
	if r.exit != 1 {
		t.Fatalf("exit %d, want 1", r.exit)
	}
	j := readJUnit(t, junit)
	s := j.Suites[0]
	if s.Failures != 1 || s.Cases[0].Failure == nil || s.Cases[0].Name != "cas/counter/none/fence-none" {
		t.Errorf("JUnit does not show the failing cell: %+v", s)
	}
	if !strings.Contains(r.stdout, "cas/counter/none/fence-none: contradicted") {
		t.Errorf("the contradicted cell is not printed")
	}
}
