package e2e

import (
	"bytes"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockbench/lockbench/catalog"
	"github.com/lockbench/lockbench/checkers"
)

// A run found invalid where the baseline had ten valid runs of its group
// is a new-invalid change, which fails compare by default: one faulted
// redis run without a fence (which the matrix expects invalid), against a
// baseline catalog of ten copies of it judged valid.
func TestCompareBaselineNewInvalid(t *testing.T) {
	dir := t.TempDir()
	now, base := filepath.Join(dir, "now.db"), filepath.Join(dir, "base.db")
	// Pauses aimed at the section, a second apart, leave each thawed
	// holder a stale write to send within a short run.
	r := mustCatch(t, nil, 7, "run", "--backend", "redis", "--nemesis", "pause", "--fence", "none",
		"--failpoint", "section", "--nemesis-interval", "1s", "--time-limit", "8s")
	if r.exit != 1 {
		t.Fatalf("exit %d, want 1 (invalid)", r.exit)
	}
	if out, err := exec.Command(binary, "import", "--catalog", now, r.dir).CombinedOutput(); err != nil {
		t.Fatalf("import: %v\n%s", err, out)
	}
	e, err := catalog.Judged(r.dir)
	if err != nil {
		t.Fatal(err)
	}
	c, err := catalog.Open(base)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		v := e
		v.Test.RunID = fmt.Sprintf("%s-baseline-%d", e.Test.RunID, i)
		v.Test.Config.Seed = int64(1000 + i)
		v.Results.Verdict = checkers.Valid
		if err := c.Record(v); err != nil {
			t.Fatal(err)
		}
	}
	c.Close()
	cmd := exec.Command(binary, "compare", "--catalog", now, "--baseline-catalog", base)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("compare: %v, want exit 1\n%s", err, out.String())
	}
	t.Logf("compare:\n%s", out.String())
	i := strings.Index(out.String(), "changes against")
	if i < 0 {
		t.Fatal("compare printed no changes section")
	}
	section := out.String()[i:]
	for _, want := range []string{"backend=redis nemesis=pause fence=none", "new-invalid", "0/10 invalid"} {
		if !strings.Contains(section, want) {
			t.Errorf("the changes do not name %q", want)
		}
	}
}
