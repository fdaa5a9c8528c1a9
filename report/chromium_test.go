package report

import (
	"bytes"
	"context"
	"image"
	"image/png"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockbench/lockbench/rundir"
)

// chromium returns the browser, or skips: the test needs a real one.
func chromium(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: no browser")
	}
	bin, err := exec.LookPath("chromium")
	if err != nil {
		t.Skip("chromium is not installed")
	}
	return bin
}

// runChromium runs headless Chromium with its own profile, so parallel
// runs do not share one.
func runChromium(t *testing.T, bin string, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	args = append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
		"--user-data-dir=" + t.TempDir()}, args...)
	cmd := exec.CommandContext(ctx, bin, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("chromium %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return out
}

func TestChromiumRendersReport(t *testing.T) {
	bin := chromium(t)
	for _, run := range []string{"invalid", "valid"} {
		t.Run(run, func(t *testing.T) {
			dir := writeRun(t, run)
			url := "file://" + filepath.Join(dir, rundir.HTMLFile)

			shot := filepath.Join(dir, "screenshot.png")
			runChromium(t, bin, "--screenshot="+shot, "--window-size=1400,2400", url)
			f, err := os.Open(shot)
			if err != nil {
				t.Fatalf("no screenshot: %v", err)
			}
			defer f.Close()
			img, err := png.Decode(f)
			if err != nil {
				t.Fatalf("screenshot: %v", err)
			}
			if b := img.Bounds(); b.Dx() != 1400 || b.Dy() != 2400 {
				t.Errorf("screenshot is %v, want 1400x2400", b)
			}
			colours, ink := colourStats(img)
			t.Logf("%d distinct colours, %.1f%% of pixels dark", colours, ink*100)
			if colours < 200 || ink < 0.005 {
				t.Errorf("the page looks blank: %d colours, %.1f%% dark pixels", colours, ink*100)
			}

			dom := string(runChromium(t, bin, "--dump-dom", url))
			overview := between(t, dom, `id="ov-timeline"`, "</svg>")
			if n := strings.Count(overview, `<g class="lane"`); n != 5 {
				t.Errorf("rendered overview has %d lanes, want 5", n)
			}
			if n := strings.Count(overview, `class="fault"`); n != 3 {
				t.Errorf("rendered overview shades %d fault windows, want 3", n)
			}
			if n := strings.Count(dom, `<svg class="plot"`); n != 8 {
				t.Errorf("rendered page has %d plots, want 8", n)
			}
			if run == "invalid" {
				table := between(t, dom, `<table id="anomaly-table">`, "</table>")
				if n := strings.Count(table, `class="anomaly"`); n != 7 || !strings.Contains(table, "stale-write-accepted") {
					t.Errorf("rendered anomaly table has %d rows:\n%s", n, table)
				}
			} else if !strings.Contains(dom, `id="rejection-1"`) {
				t.Error("the rendered valid run does not show the rejected writes")
			}
		})
	}
}

// colourStats counts the distinct colours of an image, up to a bound, and
// the share of dark pixels: text, marks and lines, on a light page.
func colourStats(img image.Image) (int, float64) {
	seen := map[uint32]bool{}
	b := img.Bounds()
	dark := 0
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			if len(seen) < 5000 {
				seen[r>>8<<16|g>>8<<8|bl>>8] = true
			}
			if (r+g+bl)/3 < 0x9000 {
				dark++
			}
		}
	}
	return len(seen), float64(dark) / float64(b.Dx()*b.Dy())
}

// serve's pages as a browser draws them: the index lists a run three
// levels deep and a matrix, and an anomalies page shows its sequence
// diagrams as drawings, each with its participants and messages.
func TestChromiumRendersServedPages(t *testing.T) {
	bin := chromium(t)
	root, _ := servedTree(t)
	srv := httptest.NewServer(Handler(root))
	defer srv.Close()

	index := string(runChromium(t, bin, "--dump-dom", srv.URL+"/"))
	runs := between(t, index, `<table id="runs">`, "</table>")
	if !strings.Contains(runs, `href="ci/nightly/redis-counter-pause-fence-none/20261202T094515.549Z/report.html"`) ||
		!strings.Contains(runs, `class="verdict running"`) || strings.Count(runs, `<tr class="run">`) != 3 {
		t.Errorf("index's runs:\n%s", runs)
	}
	if m := between(t, index, `<table id="matrices">`, "</table>"); !strings.Contains(m, `href="matrix/20261202T100000.000Z/matrix.md"`) ||
		!strings.Contains(m, "1 contradicted") {
		t.Errorf("index's matrices:\n%s", m)
	}

	url := srv.URL + "/ci/nightly/redis-counter-pause-fence-none/20261202T094515.549Z/" + rundir.AnomaliesFile
	dom := string(runChromium(t, bin, "--dump-dom", url))
	diagram := between(t, dom, `<svg class="sequence"`, "</svg>")
	if n := strings.Count(diagram, `class="participant"`); n < 6 {
		t.Errorf("the first diagram has %d participant boxes, want at least 3 columns, each drawn top and bottom", n)
	}
	if n := strings.Count(diagram, `class="message"`); n < 3 {
		t.Errorf("the first diagram has %d messages", n)
	}
	shot := filepath.Join(t.TempDir(), "anomalies.png")
	runChromium(t, bin, "--screenshot="+shot, "--window-size=1100,1600", url)
	f, err := os.Open(shot)
	if err != nil {
		t.Fatalf("no screenshot: %v", err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	if colours, ink := colourStats(img); colours < 50 || ink < 0.005 {
		t.Errorf("the anomalies page looks blank: %d colours, %.1f%% dark pixels", colours, ink*100)
	}
}

// linear.html as a browser draws it: the test's name in the title, a way
// back to the report, and rows named after the clients.
func TestChromiumRendersLinear(t *testing.T) {
	bin := chromium(t)
	dir := writeRun(t, "invalid")
	dom := string(runChromium(t, bin, "--dump-dom", "file://"+filepath.Join(dir, rundir.LinearFile)))
	if !strings.Contains(dom, "<title>redis-counter-pause-fence-none: linearizability</title>") || !strings.Contains(dom, `href="report.html"`) {
		t.Error("linear.html lacks its title or the link back to the report")
	}
	canvas := between(t, dom, `<div id="canvas">`, "</svg>")
	for _, c := range []string{">c1</text>", ">c3</text>", ">c5</text>"} {
		if !strings.Contains(canvas, c) {
			t.Errorf("the rows are not named after the clients: no %s", c)
		}
	}
	if strings.Contains(canvas, `text-anchor="end">0</text>`) {
		t.Error("a row is still labelled with porcupine's number")
	}
}

// overflowProbe, appended to a page, lists what sticks out past the
// viewport's right edge, timelines aside (they may scroll), into
// <pre id="overflow">.
const overflowProbe = `<script>
(() => {
  const w = document.documentElement.clientWidth, bad = []
  for (const el of document.querySelectorAll('body *')) {
    if (el.closest('svg.timeline')) continue
    const r = el.getBoundingClientRect()
    if (r.width > 0 && r.right > w + 1) bad.push(el.tagName + (el.id ? '#' + el.id : '') + ' ' + (el.getAttribute('class') || '') + ' right=' + Math.round(r.right))
  }
  const pre = document.createElement('pre')
  pre.id = 'overflow'
  pre.textContent = 'scrollWidth=' + document.documentElement.scrollWidth + ' width=' + w + '\n' + bad.slice(0, 15).join('\n')
  document.body.appendChild(pre)
})()
</script>`

// report.html at 800 px: nothing but the timelines is wider than the
// window, so it reads without scrolling sideways.
func TestChromiumReportAt800(t *testing.T) {
	bin := chromium(t)
	for _, run := range []string{"invalid", "valid"} {
		t.Run(run, func(t *testing.T) {
			dir := writeRun(t, run)
			page := readFile(t, dir, rundir.HTMLFile)
			i := strings.LastIndex(page, "</body>")
			probe := filepath.Join(dir, "probe.html")
			if err := os.WriteFile(probe, []byte(page[:i]+overflowProbe+page[i:]), 0o644); err != nil {
				t.Fatal(err)
			}
			dom := string(runChromium(t, bin, "--dump-dom", "--window-size=800,1200", "file://"+probe))
			report := strings.TrimSuffix(strings.TrimPrefix(between(t, dom, `<pre id="overflow">`, "</pre>"), `<pre id="overflow">`), "</pre>")
			first, rest, _ := strings.Cut(report, "\n")
			if first != "scrollWidth=800 width=800" || strings.TrimSpace(rest) != "" {
				t.Errorf("report.html at 800 px scrolls sideways: %s\n%s", first, rest)
			}
		})
	}
}
