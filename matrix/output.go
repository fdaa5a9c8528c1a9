package matrix

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"github.com/lockbench/lockbench/rundir"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Summary is matrix.json.
type Summary struct {
	Started time.Time    `json:"started"`
	Seconds float64      `json:"seconds"`
	Runs    int          `json:"runs_per_cell"`
	Cells   []CellResult `json:"cells"`
	Skipped []Skipped    `json:"skipped,omitempty"`
	Exit    int          `json:"exit"`
	// Interrupted is set when a signal cut the matrix short.
	Interrupted bool `json:"interrupted,omitempty"`
	// Grid, Expectations and Lockbench identify what was run (GridDigest),
	// against which rules (Expectations.Digest) and by which lockbench:
	// shards merge only when all three agree.
	Grid         string `json:"grid"`
	Expectations string `json:"expectations"`
	Lockbench    string `json:"lockbench"`
	// Shard is set on the output of `matrix --shard`.
	Shard *ShardRun `json:"shard,omitempty"`
	// Shards are the shards a merged matrix was made of.
	Shards []ShardRun `json:"shards,omitempty"`
}

// ShardRun is one shard as it ran.
type ShardRun struct {
	Shard
	// Dir is the shard's matrix directory as the shard named it; its runs'
	// directories are named from the same place.
	Dir string `json:"dir"`
	// Cells are the places in the grid of the shard's cells.
	Cells   []int   `json:"cells"`
	Seconds float64 `json:"seconds"`
}

// Write writes matrix.md and matrix.json into dir.
func Write(dir string, s Summary) error {
	data, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return fmt.Errorf("encode matrix.json: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, rundir.MatrixJSON), append(data, '\n'), 0o644); err != nil {
		return fmt.Errorf("write matrix.json: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, rundir.MatrixMarkdown), []byte(Markdown(dir, s)), 0o644); err != nil {
		return fmt.Errorf("write matrix.md: %w", err)
	}
	return nil
}

var outcomeMark = map[string]string{Met: "✅ met", Contradicted: "❌ contradicted", Undecided: "⚠️ unknown",
	Unexercised: "⚪ unexercised (no fault reached a holder)"}

// Markdown is matrix.md: one row per cell, read at a glance.
func Markdown(dir string, s Summary) string {
	var b strings.Builder
	met := 0
	for _, c := range s.Cells {
		if c.Outcome == Met {
			met++
		}
	}
	fmt.Fprintf(&b, "# lockbench matrix\n\n%d of %d cells met their expectation; %d run(s) per cell; wall time %s.\n\n",
		met, len(s.Cells), s.Runs, (time.Duration(s.Seconds) * time.Second).Round(time.Second))
	switch {
	case s.Shard != nil:
		fmt.Fprintf(&b, "Shard %s of the grid: merge it with the others (`lockbench matrix merge`).\n\n", s.Shard.Shard)
	case len(s.Shards) > 0:
		var total, longest float64
		for _, p := range s.Shards {
			total += p.Seconds
			longest = max(longest, p.Seconds)
		}
		fmt.Fprintf(&b, "Merged from %d shards: the longest took %s, all of them %s together.\n\n", len(s.Shards),
			(time.Duration(longest) * time.Second).Round(time.Second), (time.Duration(total) * time.Second).Round(time.Second))
	}
	mutationTable(&b, s.Cells)
	b.WriteString("| cell | verdict per run | expected | outcome | detection rate | first anomaly | lock cycles/s |\n")
	b.WriteString("|---|---|---|---|---|---|---|\n")
	for _, c := range s.Cells {
		var verdicts []string
		var first []float64
		var cycles float64
		measured := 0 // runs whose cycles count: not stopped early
		for _, r := range c.Runs {
			v := string(r.Verdict)
			if r.Evidence != "" {
				v += " (weak)"
			}
			if r.Stopped {
				v += " (stopped)"
			}
			if r.Dir != "" {
				v = fmt.Sprintf("[%s](%s/report.html)", v, relDir(dir, r.Dir))
			}
			verdicts = append(verdicts, v)
			if r.FirstAnomaly != nil {
				first = append(first, *r.FirstAnomaly)
			}
			if !r.Stopped {
				cycles += r.CyclesPerSec
				measured++
			}
		}
		firstCol := "—"
		if len(first) > 0 {
			firstCol = fmt.Sprintf("%.1f s", minOf(first))
		}
		// Every run stopped early: no throughput to show, rather than 0.
		cyclesCol := "—"
		if measured > 0 || len(c.Runs) == 0 {
			cyclesCol = fmt.Sprintf("%.1f", cycles/float64(max(measured, 1)))
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %.0f%% | %s | %s |\n", c.Cell.Name(), strings.Join(verdicts, " "),
			c.Expect, outcomeMark[c.Outcome], 100*c.DetectionRate, firstCol, cyclesCol)
	}
	b.WriteString("\nExpectations:\n\n")
	for _, c := range s.Cells {
		fmt.Fprintf(&b, "- `%s`: %s — %s\n", c.Cell.Name(), c.Expect, c.Reason)
		if c.Decision != nil {
			// The stopping rule with its numbers, from every run pooled.
			fmt.Fprintf(&b, "  - decided by %d earlier and %d new run(s): %s\n", c.Prior.Runs(), len(c.Runs), c.Decision)
		}
		for _, r := range c.Runs {
			if r.Error != "" {
				fmt.Fprintf(&b, "  - the run of seed %d has no verdict: %s\n", r.Seed, r.Error)
			}
		}
	}
	if len(s.Skipped) > 0 {
		b.WriteString("\nLeft out:\n\n")
		for _, k := range s.Skipped {
			fmt.Fprintf(&b, "- `%s`: %s\n", k.Cell.Name(), k.Reason)
		}
	}
	return b.String()
}

func minOf(xs []float64) float64 {
	m := xs[0]
	for _, x := range xs[1:] {
		m = min(m, x)
	}
	return m
}

// JUnit XML, as CI systems read it: one testcase per cell, failing when the
// cell contradicted its expectation, skipped when undecided.
type junitSuites struct {
	XMLName xml.Name     `xml:"testsuites"`
	Suites  []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Skipped  int         `xml:"skipped,attr"`
	Time     float64     `xml:"time,attr"`
	Cases    []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      float64       `xml:"time,attr"`
	Failure   *junitMessage `xml:"failure,omitempty"`
	Skipped   *junitMessage `xml:"skipped,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitMessage struct {
	Message string `xml:"message,attr"`
	Text    string `xml:",chardata"`
}

// WriteJUnit writes the JUnit XML file.
func WriteJUnit(path string, s Summary) error {
	suite := junitSuite{Name: "lockbench matrix", Time: s.Seconds}
	for _, c := range s.Cells {
		var verdicts, dirs []string
		for _, r := range c.Runs {
			verdicts = append(verdicts, string(r.Verdict))
			dirs = append(dirs, r.Dir)
		}
		tc := junitCase{Name: c.Cell.Name(), Classname: "lockbench." + c.Cell.Backend, Time: c.Seconds,
			SystemOut: "results: " + strings.Join(dirs, " ")}
		msg := fmt.Sprintf("expected %s (%s), runs: %s", c.Expect, c.Reason, strings.Join(verdicts, ", "))
		switch c.Outcome {
		case Contradicted:
			suite.Failures++
			tc.Failure = &junitMessage{Message: "expectation contradicted", Text: msg}
		case Undecided:
			suite.Skipped++
			tc.Skipped = &junitMessage{Message: "no verdict", Text: msg}
		case Unexercised:
			suite.Skipped++
			tc.Skipped = &junitMessage{Message: "valid, but no fault reached a holder", Text: msg}
		}
		suite.Cases = append(suite.Cases, tc)
		suite.Tests++
	}
	data, err := xml.MarshalIndent(junitSuites{Suites: []junitSuite{suite}}, "", "  ")
	if err != nil {
		return fmt.Errorf("encode JUnit: %w", err)
	}
	if err := os.WriteFile(path, append([]byte(xml.Header), append(data, '\n')...), 0o644); err != nil {
		return fmt.Errorf("write JUnit: %w", err)
	}
	return nil
}
