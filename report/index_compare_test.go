package report

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockbench/lockbench/rundir"
)

// TestIndexListsCompare: the served index links to compare.html once the
// root holds one, and the link serves it.
func TestIndexListsCompare(t *testing.T) {
	root := t.TempDir()
	srv := httptest.NewServer(Handler(root))
	defer srv.Close()
	get := func(path string) (int, string) {
		t.Helper()
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, string(body)
	}
	if _, body := get("/"); strings.Contains(body, `href="compare.html"`) {
		t.Error("the index links to a compare.html the root does not hold")
	}
	if err := os.WriteFile(filepath.Join(root, rundir.CompareFile), []byte("<!doctype html><title>comparison</title>"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, body := get("/"); !strings.Contains(body, `<a href="compare.html">`) {
		t.Errorf("the index does not link to compare.html:\n%s", body)
	}
	if code, body := get("/" + rundir.CompareFile); code != http.StatusOK || !strings.Contains(body, "comparison") {
		t.Errorf("GET /compare.html: %d %q", code, body)
	}
}
