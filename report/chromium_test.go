package report

import (
	"bytes"
	"context"
	"image"
	"image/png"
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
			if n := strings.Count(dom, `<svg class="plot"`); n != 5 {
				t.Errorf("rendered page has %d plots, want 5", n)
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
