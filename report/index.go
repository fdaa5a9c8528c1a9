package report

import (
	"cmp"
	"errors"
	"fmt"
	"html/template"
	"io"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/lockbench/lockbench/rundir"
)

// RunSummary is one run of a results tree, as the index lists it. A run
// whose files are missing or unreadable is still listed, with Problems
// saying what could not be read.
type RunSummary struct {
	// Path is the run's directory relative to the tree's root, with
	// slashes: <test name>/<start time>.
	Path    string
	Test    string
	Start   time.Time
	Backend string
	Nemesis string
	Fence   string
	Seed    int64
	Verdict string
	// Evidence qualifies a valid verdict (checkers.WeakEvidence).
	Evidence string
	Report   bool // report.html exists
	Problems []string
}

// Verdicts the index shows beyond the checkers' own.
const (
	VerdictUnchecked  = "unchecked"  // no results.json
	VerdictUnreadable = "unreadable" // results.json could not be parsed
)

// Index lists the runs under root, newest first. Runs are the directories
// <root>/<test>/<start> holding a run's test.json, history or results.
func Index(root string) ([]RunSummary, error) {
	tests, err := os.ReadDir(root)
	if err != nil {
		return nil, fmt.Errorf("read results tree: %w", err)
	}
	var runs []RunSummary
	for _, t := range tests {
		if !t.IsDir() {
			continue
		}
		starts, err := os.ReadDir(filepath.Join(root, t.Name()))
		if err != nil {
			runs = append(runs, RunSummary{Path: t.Name(), Test: t.Name(), Verdict: VerdictUnreadable, Problems: []string{err.Error()}})
			continue
		}
		for _, s := range starts {
			dir := filepath.Join(root, t.Name(), s.Name())
			if s.IsDir() && isRun(dir) {
				runs = append(runs, summarize(dir, t.Name(), s.Name()))
			}
		}
	}
	slices.SortStableFunc(runs, func(a, b RunSummary) int {
		return cmp.Or(b.Start.Compare(a.Start), strings.Compare(a.Path, b.Path))
	})
	return runs, nil
}

func isRun(dir string) bool {
	for _, f := range []string{rundir.TestFile, rundir.HistoryFile, rundir.ResultsFile} {
		if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
			return true
		}
	}
	return false
}

func summarize(dir, test, start string) RunSummary {
	r := RunSummary{Path: path.Join(test, start), Test: test, Verdict: VerdictUnchecked}
	// The directory's name is the start time, should test.json not say.
	if t, err := time.Parse(rundir.StartLayout, start); err == nil {
		r.Start = t
	}
	if tf, _, err := rundir.ReadTest(dir); err != nil {
		r.Problems = append(r.Problems, err.Error())
	} else {
		r.Test = cmp.Or(tf.Name, test)
		if !tf.Start.IsZero() {
			r.Start = tf.Start
		}
		r.Backend, r.Fence, r.Seed = tf.Config.Backend, string(tf.Config.Fence), tf.Config.Seed
		r.Nemesis = strings.Join(tf.Config.Nemesis, "+")
	}
	switch res, err := rundir.ReadResults(dir); {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		r.Verdict = VerdictUnreadable
		r.Problems = append(r.Problems, err.Error())
	default:
		r.Verdict = cmp.Or(string(res.Verdict), VerdictUnreadable)
		r.Evidence = res.Evidence
	}
	if _, err := os.Stat(filepath.Join(dir, rundir.HTMLFile)); err == nil {
		r.Report = true
	}
	return r
}

var indexTmpl = template.Must(template.New("index").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>lockbench runs</title>
<style>
body { margin: 0; background: #f1f5f9; color: #0f172a; font: 14px/1.45 "Liberation Sans", "DejaVu Sans", Arial, sans-serif; }
main { max-width: 1200px; margin: 0 auto; padding: 20px; }
h1 { font-size: 22px; margin: 4px 0 14px; }
table { border-collapse: collapse; width: 100%; background: #fff; border: 1px solid #e2e8f0; }
th, td { text-align: left; padding: 6px 10px; border-bottom: 1px solid #e2e8f0; vertical-align: top; }
th { background: #f8fafc; color: #475569; font-weight: 600; }
a { color: #1d4ed8; text-decoration: none; } a:hover { text-decoration: underline; }
.verdict { display: inline-block; border-radius: 5px; padding: 1px 8px; font-weight: 700; font-size: 12px; text-transform: uppercase; color: #fff; background: #64748b; }
.verdict.valid { background: #16a34a; } .verdict.invalid { background: #dc2626; } .verdict.unknown { background: #d97706; }
.problem { color: #b45309; font-size: 12px; }
.muted { color: #64748b; }
</style></head>
<body><main>
<h1>lockbench runs <span class="muted">in {{.Root}}</span></h1>
{{if .Runs}}<table>
<tr><th>test</th><th>started</th><th>backend</th><th>nemesis</th><th>fence</th><th>seed</th><th>verdict</th><th>files</th></tr>
{{range .Runs}}<tr class="run">
<td>{{if .Report}}<a href="{{.Path}}/report.html">{{.Test}}</a>{{else}}{{.Test}}{{end}}
{{range .Problems}}<div class="problem">{{.}}</div>{{end}}</td>
<td>{{if not .Start.IsZero}}{{.Start.Format "2006-01-02 15:04:05"}}{{end}}</td>
<td>{{.Backend}}</td><td>{{.Nemesis}}</td><td>{{.Fence}}</td><td>{{if .Backend}}{{.Seed}}{{end}}</td>
<td><span class="verdict {{.Verdict}}">{{.Verdict}}</span>{{if .Evidence}} <span class="muted">{{.Evidence}}</span>{{end}}</td>
<td><a href="{{.Path}}/">directory</a>{{if not .Report}} <span class="muted">(no report)</span>{{end}}</td>
</tr>{{end}}
</table>{{else}}<p>No runs yet.</p>{{end}}
</main></body></html>
`))

// WriteIndex renders the index page of a results tree.
func WriteIndex(w io.Writer, root string, runs []RunSummary) error {
	if err := indexTmpl.Execute(w, struct {
		Root string
		Runs []RunSummary
	}{root, runs}); err != nil {
		return fmt.Errorf("render index: %w", err)
	}
	return nil
}

// Handler serves a results tree: the index of runs at /, every file below.
// The index is read afresh on each request, so runs finishing while it
// serves appear on reload.
func Handler(root string) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, _ *http.Request) {
		runs, err := Index(root)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		if err := WriteIndex(w, root, runs); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
		}
	})
	mux.Handle("GET /", http.FileServer(http.Dir(root)))
	return mux
}
