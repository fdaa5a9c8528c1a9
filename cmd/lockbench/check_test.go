package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// copyRun makes a run directory of a golden history and store log, with a
// real run's test.json marked finished, for `lockbench check`.
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
		if name == "test.json" {
			data = append(bytes.TrimSuffix(bytes.TrimSpace(data), []byte("}")), []byte(`,"end":"2026-01-01T00:00:00Z"}`)...)
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
}
