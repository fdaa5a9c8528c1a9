package catalog

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/lockbench/lockbench/checkers"
	"github.com/lockbench/lockbench/config"
	"github.com/lockbench/lockbench/metrics"
	"github.com/lockbench/lockbench/rundir"
)

// MeasuredExt ends the files of a measured directory (matrix/measured/):
// one JSON line per run, small enough to commit, so that a measurement
// goes on from one machine to the next.
const MeasuredExt = ".jsonl"

// Measured is one judged run as a measured line keeps it: what the
// catalog keeps of it, and nothing of its files but their place.
type Measured struct {
	RunID string    `json:"run_id"`
	Start time.Time `json:"start"`
	Seed  int64     `json:"seed"`
	// Cell and Flags are the matrix cell's name and its grid's flags
	// digest (rundir.Cell); empty for a run of no matrix.
	Cell     string          `json:"cell,omitempty"`
	Flags    string          `json:"flags,omitempty"`
	CellSpec json.RawMessage `json:"cell_spec,omitempty"`
	Name     string          `json:"name"`
	// Dir is where the run's files were: absolute in a catalog, relative
	// to its results root (test name/start) in a measured file.
	Dir         string            `json:"dir"`
	Revision    string            `json:"revision"`
	Checked     time.Time         `json:"checked"`
	Verdict     checkers.Verdict  `json:"verdict"`
	Evidence    string            `json:"evidence,omitempty"`
	Interrupted bool              `json:"interrupted,omitempty"`
	Config      config.Config     `json:"config"`
	Versions    map[string]string `json:"versions"`
	Host        string            `json:"host,omitempty"`
	// Checkers are each checker's verdict, counts and anomaly kinds.
	Checkers []summary              `json:"checkers"`
	Faults   []checkers.FaultEffect `json:"faults,omitempty"`
	Metrics  metrics.Run            `json:"metrics"`
}

// Measured is the entry as the catalog keeps it. An interrupted run's
// verdict covers only part of the run: it is kept as unknown, never as
// what the part said.
func (e Entry) Measured() Measured {
	m := Measured{RunID: e.Test.RunID, Start: e.Test.Start, Seed: e.Test.Config.Seed, Name: e.Test.Name, Dir: e.Dir,
		Revision: e.Results.Lockbench, Checked: e.Results.Checked, Verdict: e.Results.Verdict, Evidence: e.Results.Evidence,
		Interrupted: e.Test.Interrupted, Config: e.Test.Config, Versions: e.Test.Versions, Host: hostClass(e.Test),
		Checkers: summaries(e.Results.Checkers), Faults: faultsOf(e.Results.Checkers), Metrics: e.Metrics}
	if e.Test.Cell != nil {
		m.Cell, m.Flags, m.CellSpec = e.Test.Cell.Name, e.Test.Cell.Flags, e.Test.Cell.Spec
	}
	if m.Interrupted {
		m.Verdict, m.Evidence = checkers.Unknown, ""
	}
	return m
}

// Line is the measured line of the run, its Dir made relative to the
// results root (test name/start) so that it names no machine's folders.
func (m Measured) Line() ([]byte, error) {
	m.Dir = filepath.Join(m.Name, m.Start.UTC().Format(rundir.StartLayout))
	b, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("measured line of %s: %w", m.RunID, err)
	}
	return append(b, '\n'), nil
}

// ReadMeasured reads a measured file. A line that is not a measured run
// is refused with its place, never skipped: a measurement built on a
// damaged file would be judged on runs it does not have.
func ReadMeasured(path string) ([]Measured, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("measured: %w", err)
	}
	var out []Measured
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 16<<20)
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var m Measured
		dec := json.NewDecoder(bytes.NewReader(line))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&m); err != nil {
			return nil, fmt.Errorf("%w: %s:%d: %v", ErrBad, path, n, err)
		}
		if m.RunID == "" || m.Start.IsZero() || m.Revision == "" || m.Checked.IsZero() || !slices.Contains(verdicts, m.Verdict) {
			return nil, fmt.Errorf("%w: %s:%d: not a measured run (run_id, start, revision, checked and verdict are needed)", ErrBad, path, n)
		}
		out = append(out, m)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrBad, path, err)
	}
	return out, nil
}

var verdicts = []checkers.Verdict{checkers.Valid, checkers.Invalid, checkers.Unknown}

// AppendMeasured appends the run's line to the file at path, creating it
// and its folders: a cell's runs are committed one line each, as they
// finish, so a measurement cut short resumes where it was.
func AppendMeasured(path string, m Measured) error {
	line, err := m.Line()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("measured: %w", err)
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("measured: %w", err)
	}
	if _, err := f.Write(line); err != nil {
		f.Close()
		return fmt.Errorf("measured %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("measured %s: %w", path, err)
	}
	return nil
}

// MeasuredPath is the file under the measured directory dir that holds a
// cell's runs: the cell's name, one folder per part, so that every cell
// has a file of its own and a reader finds it by name.
func MeasuredPath(dir, cell string) string {
	return filepath.Join(dir, filepath.FromSlash(cell)+MeasuredExt)
}

// CellRun is one run of a matrix cell, as its latest judgment by a
// compatible revision gives it.
type CellRun struct {
	Seed     int64            `json:"seed"`
	Verdict  checkers.Verdict `json:"verdict"`
	Revision string           `json:"revision"`
	Start    time.Time        `json:"start"`
}

// CellRuns are the runs of the cell under the flags digest flags, one per
// seed (the latest run of a seed run twice), each by its latest judgment
// among the revisions compatible accepts. Interrupted runs are left out:
// they said nothing of the cell, and their seed is run again. Stale
// counts the runs with no judgment compatible accepts, which must be
// checked again before they count.
func (c *Catalog) CellRuns(cell, flags string, compatible func(revision string) bool) (runs []CellRun, stale int, err error) {
	rows, err := c.db.Query(`SELECT r.seed, r.start, r.run_id, j.revision, j.checked, j.verdict FROM runs r JOIN judgments j USING (run_id, start, seed)
		WHERE r.cell = $1 AND r.flags = $2 AND r.interrupted = 0 ORDER BY r.seed, r.start, r.run_id, j.checked DESC, j.revision DESC`, cell, flags)
	if err != nil {
		return nil, 0, fmt.Errorf("catalog %s: %w", c.path, err)
	}
	defer rows.Close()
	type key struct{ start, id string }
	bySeed := map[int64]CellRun{}
	var judged, all = map[key]bool{}, map[key]bool{}
	for rows.Next() {
		var seed int64
		var start, id, rev, checked, verdict string
		if err := rows.Scan(&seed, &start, &id, &rev, &checked, &verdict); err != nil {
			return nil, 0, fmt.Errorf("catalog %s: %w", c.path, err)
		}
		k := key{start, id}
		all[k] = true
		if judged[k] || !compatible(rev) {
			continue
		}
		judged[k] = true
		t, err := time.Parse(time.RFC3339Nano, start)
		if err != nil {
			return nil, 0, fmt.Errorf("%w: %s: run %s: start %q", ErrBad, c.path, id, start)
		}
		if prev, ok := bySeed[seed]; !ok || t.After(prev.Start) {
			bySeed[seed] = CellRun{Seed: seed, Verdict: checkers.Verdict(verdict), Revision: rev, Start: t}
		}
	}
	if err := rows.Err(); err != nil {
		return nil, 0, fmt.Errorf("catalog %s: %w", c.path, err)
	}
	for _, r := range bySeed {
		runs = append(runs, r)
	}
	slices.SortFunc(runs, func(a, b CellRun) int { return int(a.Seed - b.Seed) })
	return runs, len(all) - len(judged), nil
}

// MeasuredCell is a cell the catalog has matrix runs of: its name, the
// flags digest they ran under, and the cell itself (rundir.Cell.Spec).
type MeasuredCell struct {
	Name, Flags string
	Spec        json.RawMessage
}

// MeasuredCells are the cells of the catalog's matrix runs, by name and
// flags.
func (c *Catalog) MeasuredCells() ([]MeasuredCell, error) {
	rows, err := c.db.Query(`SELECT cell, flags, MAX(cell_spec) FROM runs WHERE cell <> '' GROUP BY cell, flags ORDER BY cell, flags`)
	if err != nil {
		return nil, fmt.Errorf("catalog %s: %w", c.path, err)
	}
	defer rows.Close()
	var out []MeasuredCell
	for rows.Next() {
		var m MeasuredCell
		var spec string
		if err := rows.Scan(&m.Name, &m.Flags, &spec); err != nil {
			return nil, fmt.Errorf("catalog %s: %w", c.path, err)
		}
		m.Spec = json.RawMessage(spec)
		out = append(out, m)
	}
	return out, rows.Err()
}

// isMeasured says whether path is a measured file.
func isMeasured(path string) bool { return strings.HasSuffix(path, MeasuredExt) }
