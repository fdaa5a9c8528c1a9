package powerfs

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hanwen/go-fuse/v2/fuse"
)

// mount serves a disk through the kernel at dir, as a node does.
type mount struct {
	t   *testing.T
	d   *Disk
	dir string
	srv *fuse.Server
}

// mounted serves a new disk; it needs /dev/fuse and the right to mount
// (root).
func mounted(t *testing.T) *mount {
	t.Helper()
	if _, err := os.Stat("/dev/fuse"); err != nil {
		t.Skipf("the file system needs /dev/fuse: %v", err)
	}
	if os.Geteuid() != 0 {
		t.Skip("mounting the file system with mount(2) needs root")
	}
	d, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	m := &mount{t: t, d: d, dir: t.TempDir()}
	m.up()
	t.Cleanup(m.down)
	return m
}

func (m *mount) up() {
	m.t.Helper()
	srv, err := Mount(m.d, m.dir, "test")
	if err != nil {
		m.t.Fatal(err)
	}
	m.srv = srv
}

func (m *mount) down() {
	if m.srv != nil {
		if err := m.srv.Unmount(); err != nil {
			m.t.Errorf("unmount: %v", err)
		}
		m.srv = nil
	}
}

func fsyncPath(t *testing.T, p string) {
	t.Helper()
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		t.Fatalf("fsync %s: %v", p, err)
	}
}

// closeBeforeUnmount closes f, a file on the mount, before the mount goes away
// when the test stops early: a file the process still holds when it exits
// is closed by the kernel with a request to the file system, which this
// very process served, and the exit would wait for the answer for ever.
func closeBeforeUnmount(t *testing.T, f *os.File) {
	t.Cleanup(func() { _ = f.Close() })
}

func TestThroughTheKernel(t *testing.T) {
	m := mounted(t)
	d, mnt := m.d, m.dir
	at := func(rel string) string { return filepath.Join(mnt, rel) }
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}

	// An append-only log, fsynced once, then appended to.
	must(os.Mkdir(at("appendonlydir"), 0o755))
	fsyncPath(t, mnt)
	f, err := os.OpenFile(at("appendonlydir/aof"), os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o644)
	must(err)
	closeBeforeUnmount(t, f)
	_, err = f.WriteString("*1\r\nSET lock c1\r\n")
	must(err)
	must(f.Sync())
	fsyncPath(t, at("appendonlydir"))
	_, err = f.WriteString("*1\r\nSET lock c2\r\n")
	must(err)
	// A manifest replaced by rename, data fsynced, directory not.
	must(os.WriteFile(at("appendonlydir/manifest"), []byte("v1"), 0o644))
	fsyncPath(t, at("appendonlydir/manifest"))
	fsyncPath(t, at("appendonlydir"))
	must(os.WriteFile(at("appendonlydir/temp-manifest"), []byte("v2"), 0o644))
	fsyncPath(t, at("appendonlydir/temp-manifest"))
	must(os.Rename(at("appendonlydir/temp-manifest"), at("appendonlydir/manifest")))
	// A durable file rewritten through a write-only descriptor: the
	// disk must still read what each write overwrites.
	must(os.WriteFile(at("db"), []byte("durable"), 0o644))
	fsyncPath(t, at("db"))
	fsyncPath(t, mnt)
	w, err := os.OpenFile(at("db"), os.O_WRONLY, 0)
	must(err)
	closeBeforeUnmount(t, w)
	_, err = w.WriteAt([]byte("XXXXXXXXXX"), 0)
	must(err)
	must(w.Close())
	// A durable file rewritten by a shell's `>`: open with O_TRUNC, which
	// the kernel may send as a truncation with no open file.
	must(os.WriteFile(at("myid"), []byte("1"), 0o644))
	fsyncPath(t, at("myid"))
	fsyncPath(t, mnt)
	must(os.WriteFile(at("myid"), []byte("2"), 0o644))
	// A file created and never made durable at all.
	must(os.WriteFile(at("scratch"), []byte("gone"), 0o644))
	must(f.Close())

	before, err := os.ReadFile(at("appendonlydir/aof"))
	must(err)
	if !strings.Contains(string(before), "c2") {
		t.Fatalf("the log does not hold what was written through the mount: %q", before)
	}

	d.Cut()
	// The power is off: the mount answers nothing.
	if err := os.WriteFile(at("appendonlydir/late"), []byte("x"), 0o644); err == nil {
		t.Fatal("a write reached the disk after the power cut")
	}
	m.down()
	rep, err := d.Lose()
	must(err)
	d.PowerOn()
	m.up()

	got, err := os.ReadFile(at("appendonlydir/aof"))
	must(err)
	if string(got) != "*1\r\nSET lock c1\r\n" {
		t.Fatalf("after the cut the log holds %q, want only the fsynced command", got)
	}
	man, err := os.ReadFile(at("appendonlydir/manifest"))
	must(err)
	if string(man) != "v1" {
		t.Fatalf("the manifest renamed over without a directory fsync holds %q, want v1", man)
	}
	es, err := os.ReadDir(at("appendonlydir"))
	must(err)
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	if !slices.Equal(names, []string{"aof", "manifest"}) {
		t.Fatalf("appendonlydir holds %v, want [aof manifest]", names)
	}
	if db, err := os.ReadFile(at("db")); err != nil || string(db) != "durable" {
		t.Fatalf("db holds %q (%v) after the cut, want what was fsynced", db, err)
	}
	if id, err := os.ReadFile(at("myid")); err != nil || string(id) != "1" {
		t.Fatalf("myid holds %q (%v) after the cut, want what was fsynced", id, err)
	}
	if _, err := os.Stat(at("scratch")); !os.IsNotExist(err) {
		t.Fatalf("a file never made durable survived the cut: %v", err)
	}
	if rep.Bytes == 0 || rep.Entries != 2 {
		t.Fatalf("report %+v: want the dropped bytes and 2 entries (scratch, the renamed manifest)", rep)
	}
	t.Logf("cut: %s", rep)
}
