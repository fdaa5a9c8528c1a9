package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockbench/lockbench/history"
)

// copyRun makes a run directory of a golden history and store log, with a
// real run's test.json (of a finished run), for `lockbench check`.
func copyRun(t *testing.T, golden string) string {
	t.Helper()
	dir := t.TempDir()
	for src, name := range map[string]string{
		filepath.Join(golden, "history.jsonl"):                                "history.jsonl",
		filepath.Join(golden, "store.log"):                                    "store.log",
		filepath.Join("..", "..", "report", "testdata", "valid", "test.json"): "test.json",
	} {
		data, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// Malformed input is refused with 254, never judged; so is a path that
// holds no run. A well-formed run gets a verdict.
func TestCheckRefusesMalformedInput(t *testing.T) {
	shapes, err := filepath.Glob(filepath.Join("..", "..", "checkers", "testdata", "malformed", "*"))
	if err != nil || len(shapes) < 6 {
		t.Fatalf("malformed goldens: %v, %v", shapes, err)
	}
	for _, shape := range shapes {
		t.Run(filepath.Base(shape), func(t *testing.T) {
			if code := run([]string{"check", copyRun(t, shape)}); code != exitUsage {
				t.Errorf("check exited %d, want %d", code, exitUsage)
			}
		})
	}
	empty := t.TempDir()
	for _, dir := range []string{filepath.Join(empty, "missing"), empty} {
		if code := run([]string{"check", dir}); code != exitUsage {
			t.Errorf("check %s exited %d, want %d", dir, code, exitUsage)
		}
	}
	golden := filepath.Join("..", "..", "checkers", "testdata", "stale-fence-none")
	if code := run([]string{"check", copyRun(t, golden)}); code != exitInvalid {
		t.Errorf("check of a well-formed invalid run exited %d, want %d", code, exitInvalid)
	}
	// A test.json without its history is no run to judge; its twin, the
	// same directory with the history, is judged.
	noHistory := copyRun(t, golden)
	if err := os.Remove(filepath.Join(noHistory, "history.jsonl")); err != nil {
		t.Fatal(err)
	}
	if code := run([]string{"check", noHistory}); code != exitUsage {
		t.Errorf("check of a run without history.jsonl exited %d, want %d", code, exitUsage)
	}
}

// The export holds one EDN map for each read and write of the counter,
// with the history's own indexes; nothing else.
func TestExportKnossos(t *testing.T) {
	dir := copyRun(t, filepath.Join("..", "..", "checkers", "testdata", "stale-fence-none"))
	if code := run([]string{"export", "--format", "knossos", dir}); code != 0 {
		t.Fatalf("export exited %d", code)
	}
	events, err := history.DecodeFile(filepath.Join(dir, "history.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, e := range events {
		if e.F != history.Read && e.F != history.Write {
			continue
		}
		value := "nil"
		if e.F == history.Write || e.Type == history.OK {
			value = fmt.Sprint(*e.Value)
		}
		p, _ := history.ClientNumber(e.Process)
		want = append(want, fmt.Sprintf("{:type :%s, :f :%s, :value %s, :process %d, :time %d, :index %d}", e.Type, e.F, value, p, e.Time, e.Index))
	}
	data, err := os.ReadFile(filepath.Join(dir, "history.edn"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(want) == 0 || len(lines) != len(want)+1 || !strings.HasPrefix(lines[0], ";;") {
		t.Fatalf("%d lines for %d reads and writes", len(lines), len(want))
	}
	for i, w := range want {
		if lines[i+1] != w {
			t.Errorf("line %d %q, want %q", i+2, lines[i+1], w)
		}
	}
	if code := run([]string{"export", "--format", "elle", dir}); code != exitUsage {
		t.Errorf("unknown format: exit %d, want %d", code, exitUsage)
	}
}

// A run without store.log, as a killed harness leaves it, exits by its
// verdict (unknown: the store's decisions are not judged), not as a
// harness error; the same run with its log exits valid.
func TestCheckWithoutStoreLogExitsByVerdict(t *testing.T) {
	for golden, want := range map[string]int{"no-store-log": exitUnknown, "kill-client-kept": exitValid} {
		src := filepath.Join("..", "..", "verdict", "testdata", golden)
		dir := t.TempDir()
		entries, err := os.ReadDir(src)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			data, err := os.ReadFile(filepath.Join(src, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, e.Name()), data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if code := run([]string{"check", dir}); code != want {
			t.Errorf("check of %s exited %d, want %d", golden, code, want)
		}
	}
}
