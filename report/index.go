package report

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io"
	"io/fs"
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
	// slashes: <test name>/<start time> as runner lays it out, or deeper
	// when runs were gathered into folders.
	Path  string
	Test  string
	RunID string
	Start time.Time
	// Duration is from the start to the clients' end; zero while the run
	// goes or when it was cut short.
	Duration time.Duration
	Backend  string
	Nemesis  string
	Fence    string
	Seed     int64
	Verdict  string
	// Evidence qualifies a valid verdict (checkers.WeakEvidence).
	Evidence string
	// Anomalies are the anomalies each checker kept, in results.json's
	// order of checkers; checkers with none are left out.
	Anomalies []CheckerCount
	Report    bool // report.html exists
	Stories   bool // anomalies.md exists
	Problems  []string
}

// CheckerCount is how many anomalies one checker kept; a checker keeps at
// most a hundred (results.json's counts have the totals).
type CheckerCount struct {
	Checker string
	N       int
}

// MatrixSummary is one matrix of a results tree, as the index lists it.
type MatrixSummary struct {
	Path     string // the matrix's directory relative to the root
	Started  time.Time
	Duration time.Duration
	Cells    int
	// Outcomes counts the cells per outcome (met, contradicted, …).
	Outcomes map[string]int
	Exit     int
	Problems []string
}

// Tree is what the index shows of a results tree.
type Tree struct {
	Runs     []RunSummary
	Matrices []MatrixSummary
	// Compare is set when the root holds a comparison page (compare.html).
	Compare bool
}

// Verdicts the index shows beyond the checkers' own.
const (
	VerdictUnchecked  = "unchecked"  // no results.json, and the run ended
	VerdictUnreadable = "unreadable" // results.json could not be parsed
	VerdictRunning    = "running"    // no end yet, and its history still grows
	VerdictCutShort   = "cut short"  // no end, and its history stopped growing: the harness died
)

// stillRunning is how recently a run's history must have grown for a run
// without an end to count as running: a run records every operation as it
// completes, and its live line comes every 5 s.
const stillRunning = time.Minute

// Index lists the runs and matrices under root, at any depth, newest
// first. A run is a directory holding a run's test.json, history or
// results; a matrix one holding matrix.json. Neither is searched further:
// a run's logs/ holds no run.
func Index(root string) (Tree, error) {
	var tree Tree
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		rel := filepath.ToSlash(strings.TrimPrefix(strings.TrimPrefix(p, root), string(filepath.Separator)))
		if err != nil {
			if p == root {
				return err
			}
			// One unreadable folder must not hide the rest of the tree.
			tree.Runs = append(tree.Runs, RunSummary{Path: rel, Test: path.Base(rel), Verdict: VerdictUnreadable, Problems: []string{err.Error()}})
			return nil
		}
		if !d.IsDir() {
			return nil
		}
		switch {
		case isFile(filepath.Join(p, rundir.MatrixJSON)):
			tree.Matrices = append(tree.Matrices, summarizeMatrix(p, rel))
			return fs.SkipDir
		case p != root && isRun(p):
			tree.Runs = append(tree.Runs, summarize(p, rel))
			return fs.SkipDir
		}
		return nil
	})
	if err != nil {
		return Tree{}, fmt.Errorf("read results tree: %w", err)
	}
	tree.Compare = isFile(filepath.Join(root, rundir.CompareFile))
	slices.SortStableFunc(tree.Runs, func(a, b RunSummary) int {
		return cmp.Or(b.Start.Compare(a.Start), strings.Compare(a.Path, b.Path))
	})
	slices.SortStableFunc(tree.Matrices, func(a, b MatrixSummary) int {
		return cmp.Or(b.Started.Compare(a.Started), strings.Compare(a.Path, b.Path))
	})
	return tree, nil
}

func isFile(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular()
}

func isRun(dir string) bool {
	return isFile(filepath.Join(dir, rundir.TestFile)) || isFile(filepath.Join(dir, rundir.HistoryFile)) || isFile(filepath.Join(dir, rundir.ResultsFile))
}

func summarize(dir, rel string) RunSummary {
	test := path.Base(path.Dir(rel))
	r := RunSummary{Path: rel, Test: test, Verdict: VerdictUnchecked}
	// The directory's name is the start time, should test.json not say.
	if t, err := time.Parse(rundir.StartLayout, path.Base(rel)); err == nil {
		r.Start = t
	}
	ended := true
	if tf, _, err := rundir.ReadTest(dir); err != nil {
		r.Problems = append(r.Problems, err.Error())
	} else {
		r.Test, r.RunID = cmp.Or(tf.Name, test), tf.RunID
		if !tf.Start.IsZero() {
			r.Start = tf.Start
		}
		if tf.End != nil {
			r.Duration = tf.End.Sub(tf.Start)
		}
		ended = tf.End != nil
		r.Backend, r.Fence, r.Seed = tf.Config.Backend, string(tf.Config.Fence), tf.Config.Seed
		r.Nemesis = strings.Join(tf.Config.Nemesis, "+")
	}
	switch res, err := rundir.ReadResults(dir); {
	case errors.Is(err, os.ErrNotExist):
		if !ended {
			r.Verdict = VerdictCutShort
			if fi, err := os.Stat(filepath.Join(dir, rundir.HistoryFile)); err == nil && time.Since(fi.ModTime()) < stillRunning {
				r.Verdict = VerdictRunning
			}
		}
	case err != nil:
		r.Verdict = VerdictUnreadable
		r.Problems = append(r.Problems, err.Error())
	default:
		r.Verdict = cmp.Or(string(res.Verdict), VerdictUnreadable)
		r.Evidence = res.Evidence
		for _, c := range res.Checkers {
			if len(c.Anomalies) > 0 {
				r.Anomalies = append(r.Anomalies, CheckerCount{c.Checker, len(c.Anomalies)})
			}
		}
	}
	r.Report = isFile(filepath.Join(dir, rundir.HTMLFile))
	r.Stories = isFile(filepath.Join(dir, rundir.AnomaliesFile))
	return r
}

// matrixFile is the part of matrix.json the index shows.
type matrixFile struct {
	Started time.Time `json:"started"`
	Seconds float64   `json:"seconds"`
	Cells   []struct {
		Outcome string `json:"outcome"`
	} `json:"cells"`
	Exit int `json:"exit"`
}

func summarizeMatrix(dir, rel string) MatrixSummary {
	m := MatrixSummary{Path: rel, Outcomes: map[string]int{}}
	if t, err := time.Parse(rundir.StartLayout, path.Base(rel)); err == nil {
		m.Started = t
	}
	var mf matrixFile
	if err := readJSON(filepath.Join(dir, rundir.MatrixJSON), &mf); err != nil {
		m.Problems = append(m.Problems, err.Error())
		return m
	}
	if !mf.Started.IsZero() {
		m.Started = mf.Started
	}
	m.Duration = time.Duration(mf.Seconds * float64(time.Second)).Round(time.Second)
	m.Cells, m.Exit = len(mf.Cells), mf.Exit
	for _, c := range mf.Cells {
		m.Outcomes[c.Outcome]++
	}
	return m
}

func readJSON(file string, v any) error {
	data, err := os.ReadFile(file)
	if err != nil {
		return fmt.Errorf("read %s: %w", filepath.Base(file), err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("%s: %w", filepath.Base(file), err)
	}
	return nil
}

var indexTmpl = template.Must(template.New("index").Funcs(template.FuncMap{
	"duration": func(d time.Duration) string { return d.Round(100 * time.Millisecond).String() },
}).Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>lockbench runs</title>
<style>
body { margin: 0; background: #f1f5f9; color: #0f172a; font: 14px/1.45 "Liberation Sans", "DejaVu Sans", Arial, sans-serif; }
main { max-width: 1300px; margin: 0 auto; padding: 20px; }
h1 { font-size: 22px; margin: 4px 0 14px; } h2 { font-size: 17px; margin: 20px 0 8px; }
.scroll { overflow-x: auto; }
table { border-collapse: collapse; width: 100%; background: #fff; border: 1px solid #e2e8f0; }
th, td { text-align: left; padding: 6px 10px; border-bottom: 1px solid #e2e8f0; vertical-align: top; }
th { background: #f8fafc; color: #475569; font-weight: 600; }
a { color: #1d4ed8; text-decoration: none; } a:hover { text-decoration: underline; }
.verdict { display: inline-block; border-radius: 5px; padding: 1px 8px; font-weight: 700; font-size: 12px; text-transform: uppercase; color: #fff; background: #64748b; white-space: nowrap; }
.verdict.valid, .verdict.met { background: #16a34a; } .verdict.invalid, .verdict.contradicted { background: #dc2626; }
.verdict.unknown, .verdict.undecided { background: #d97706; } .verdict.running { background: #2563eb; }
.problem { color: #b45309; font-size: 12px; }
.muted { color: #64748b; } .id { font-family: "DejaVu Sans Mono", monospace; font-size: 12px; }
</style></head>
<body><main>
<h1>lockbench runs <span class="muted">in {{.Root}}</span></h1>
{{if .Compare}}<p id="compare"><a href="compare.html">Comparison of the catalog's runs</a> <span class="muted">(compare.html, as lockbench compare --format html last wrote it)</span></p>{{end}}
{{if .Matrices}}<h2>Matrices</h2>
<div class="scroll"><table id="matrices">
<tr><th>matrix</th><th>started</th><th>took</th><th>cells</th><th>outcomes</th><th>exit</th></tr>
{{range .Matrices}}<tr class="matrix">
<td><a href="{{.Path}}/matrix.md">{{.Path}}</a> <span class="muted">(<a href="{{.Path}}/matrix.json">json</a>)</span>
{{range .Problems}}<div class="problem">{{.}}</div>{{end}}</td>
<td>{{if not .Started.IsZero}}{{.Started.Format "2006-01-02 15:04:05"}}{{end}}</td>
<td>{{if .Duration}}{{duration .Duration}}{{end}}</td><td>{{.Cells}}</td>
<td>{{range $k, $n := .Outcomes}}<span class="verdict {{$k}}">{{$n}} {{$k}}</span> {{end}}</td>
<td>{{if not .Problems}}{{.Exit}}{{end}}</td>
</tr>{{end}}
</table></div>{{end}}
<h2>Runs</h2>
{{if .Runs}}<div class="scroll"><table id="runs">
<tr><th>test</th><th>run</th><th>started</th><th>took</th><th>backend</th><th>nemesis</th><th>fence</th><th>seed</th><th>anomalies</th><th>verdict</th><th>files</th></tr>
{{range .Runs}}<tr class="run">
<td>{{if .Report}}<a href="{{.Path}}/report.html">{{.Test}}</a>{{else}}{{.Test}}{{end}}
<div class="muted id">{{.Path}}</div>
{{range .Problems}}<div class="problem">{{.}}</div>{{end}}</td>
<td class="id">{{.RunID}}</td>
<td>{{if not .Start.IsZero}}{{.Start.Format "2006-01-02 15:04:05"}}{{end}}</td>
<td>{{if .Duration}}{{duration .Duration}}{{end}}</td>
<td>{{.Backend}}</td><td>{{.Nemesis}}</td><td>{{.Fence}}</td><td>{{if .Backend}}{{.Seed}}{{end}}</td>
<td>{{range .Anomalies}}<div>{{.Checker}}: {{.N}}</div>{{else}}{{if eq .Verdict "valid" "invalid" "unknown"}}none{{end}}{{end}}</td>
<td><span class="verdict {{.Verdict}}">{{.Verdict}}</span>{{if .Evidence}} <span class="muted">{{.Evidence}}</span>{{end}}</td>
<td><a href="{{.Path}}/">directory</a>{{if .Stories}} · <a href="{{.Path}}/anomalies.md">anomalies</a>{{end}}{{if not .Report}} <span class="muted">(no report)</span>{{end}}</td>
</tr>{{end}}
</table></div>{{else}}<p>No runs yet.</p>{{end}}
</main></body></html>
`))

// WriteIndex renders the index page of a results tree.
func WriteIndex(w io.Writer, root string, tree Tree) error {
	if err := indexTmpl.Execute(w, struct {
		Root string
		Tree
	}{root, tree}); err != nil {
		return fmt.Errorf("render index: %w", err)
	}
	return nil
}

// Handler serves a results tree: the index of runs and matrices at /,
// Markdown files (anomalies.md, matrix.md) as HTML pages, and every other
// file as it is. A Markdown file's source is served with ?raw. The index
// is read afresh on each request, so runs finishing while it serves
// appear on reload.
func Handler(root string) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, _ *http.Request) {
		tree, err := Index(root)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		if err := WriteIndex(w, root, tree); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
		}
	})
	files := http.FileServer(http.Dir(root))
	mux.HandleFunc("GET /", func(w http.ResponseWriter, r *http.Request) {
		if path.Ext(r.URL.Path) != ".md" || r.URL.Query().Has("raw") {
			files.ServeHTTP(w, r)
			return
		}
		// http.Dir refuses paths that climb out of root, as the file
		// server does.
		f, err := http.Dir(root).Open(path.Clean(r.URL.Path))
		if err != nil {
			http.NotFound(w, r)
			return
		}
		defer f.Close()
		src, err := io.ReadAll(f)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		if err := WriteMarkdownPage(w, path.Base(r.URL.Path), src); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
		}
	})
	return mux
}
