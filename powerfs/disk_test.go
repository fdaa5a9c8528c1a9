package powerfs

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// tdisk drives a Disk as the file system would, by path.
type tdisk struct {
	t *testing.T
	d *Disk
}

func newDisk(t *testing.T) tdisk {
	t.Helper()
	d, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return tdisk{t, d}
}

func (td tdisk) p(rel string) string { return filepath.Join(td.d.Root(), rel) }

func (td tdisk) ok(err error) {
	td.t.Helper()
	if err != nil {
		td.t.Fatal(err)
	}
}

// create makes rel (a file) and returns it open.
func (td tdisk) create(rel string) *os.File {
	td.t.Helper()
	var f *os.File
	td.ok(td.d.Create(filepath.Dir(rel), filepath.Base(rel), func(p string) error {
		var err error
		f, err = os.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o644)
		return err
	}))
	td.t.Cleanup(func() { f.Close() })
	return f
}

func (td tdisk) open(rel string) *os.File {
	td.t.Helper()
	f, err := os.OpenFile(td.p(rel), os.O_RDWR, 0)
	td.ok(err)
	td.t.Cleanup(func() { f.Close() })
	return f
}

func (td tdisk) mkdir(rel string) {
	td.t.Helper()
	td.ok(td.d.Create(filepath.Dir(rel), filepath.Base(rel), func(p string) error { return os.Mkdir(p, 0o755) }))
}

func (td tdisk) write(f *os.File, s string, off int64) {
	td.t.Helper()
	n, err := td.d.WriteAt(int(f.Fd()), []byte(s), off)
	td.ok(err)
	if n != len(s) {
		td.t.Fatalf("wrote %d of %d", n, len(s))
	}
}

func (td tdisk) fsync(rel string) {
	td.t.Helper()
	ino, _, err := inoOf(td.p(rel))
	td.ok(err)
	td.ok(td.d.Sync(ino))
}

func (td tdisk) fsyncFile(f *os.File) {
	td.t.Helper()
	ino, _, err := fileSize(int(f.Fd()))
	td.ok(err)
	td.ok(td.d.Sync(ino))
}

func (td tdisk) lose() Report {
	td.t.Helper()
	td.d.Cut()
	rep, err := td.d.Lose()
	td.ok(err)
	td.d.PowerOn()
	return rep
}

func (td tdisk) content(rel string) string {
	td.t.Helper()
	b, err := os.ReadFile(td.p(rel))
	if errors.Is(err, os.ErrNotExist) {
		return "<absent>"
	}
	td.ok(err)
	return string(b)
}

func (td tdisk) names(rel string) []string {
	td.t.Helper()
	des, err := os.ReadDir(td.p(rel))
	td.ok(err)
	var out []string
	for _, de := range des {
		out = append(out, de.Name())
	}
	return out
}

func TestWrittenNotFsyncedIsLost(t *testing.T) {
	td := newDisk(t)
	f := td.create("aof")
	td.write(f, "SET a 1\n", 0)
	td.fsyncFile(f)
	td.fsync(".")
	td.write(f, "SET b 2\n", 8)
	// An overwrite of durable bytes, twice: the first save must win.
	td.write(f, "XXX", 0)
	td.write(f, "YY", 1)
	rep := td.lose()
	if got := td.content("aof"); got != "SET a 1\n" {
		t.Fatalf("after the cut the file holds %q, want what was fsynced", got)
	}
	if rep.Writes != 3 || rep.Bytes != 13 {
		t.Fatalf("report %+v: want 3 writes of 13 bytes dropped", rep)
	}
	if want := []FileChange{{Path: "aof", Before: 16, After: 8}}; !slices.Equal(rep.Files, want) {
		t.Fatalf("files %+v, want %+v", rep.Files, want)
	}
}

func TestFsyncedDataAndEntriesAreKept(t *testing.T) {
	td := newDisk(t)
	td.mkdir("dir")
	f := td.create("dir/log")
	td.write(f, "kept", 0)
	td.fsyncFile(f)
	td.fsync("dir")
	td.fsync(".")
	rep := td.lose()
	if got := td.content("dir/log"); got != "kept" {
		t.Fatalf("dir/log holds %q after the cut, want kept", got)
	}
	if rep.Writes != 0 || rep.Entries != 0 || len(rep.Files) != 0 {
		t.Fatalf("nothing was to be lost, report %+v", rep)
	}
}

func TestEntryNotFsyncedIsLost(t *testing.T) {
	td := newDisk(t)
	td.mkdir("other")
	td.fsync(".")
	// Data fsynced, directory not: the name goes, and the file with it.
	f := td.create("other/new")
	td.write(f, "data", 0)
	td.fsyncFile(f)
	// Directory fsynced, data not: the name stays, the data goes.
	g := td.create("empty")
	td.write(g, "data", 0)
	td.fsync(".")
	// A directory made durable in its parent but never fsynced itself
	// comes back empty.
	td.mkdir("sub")
	td.fsync(".")
	h := td.create("sub/x")
	td.fsyncFile(h)
	rep := td.lose()
	if got := td.content("other/new"); got != "<absent>" {
		t.Fatalf("a file whose directory was never fsynced survived: %q", got)
	}
	if got := td.content("empty"); got != "" {
		t.Fatalf("a file never fsynced kept %q", got)
	}
	if got := td.names("sub"); len(got) != 0 {
		t.Fatalf("sub holds %v, want nothing: it was never fsynced", got)
	}
	if got := td.names("."); !slices.Equal(got, []string{"empty", "other", "sub"}) {
		t.Fatalf("root holds %v, want [empty other sub]", got)
	}
	if rep.Entries != 2 {
		t.Fatalf("report %+v: want 2 entries lost (other/new, sub/x)", rep)
	}
}

func TestUnlinkNotFsyncedComesBack(t *testing.T) {
	td := newDisk(t)
	f := td.create("old")
	td.write(f, "old data", 0)
	td.fsyncFile(f)
	td.fsync(".")
	td.ok(td.d.Remove(".", "old", false))
	// Written after the unlink, through the descriptor still open.
	td.write(f, "NEW", 0)
	td.lose()
	if got := td.content("old"); got != "old data" {
		t.Fatalf("unlinked, not made durable: got %q, want the file back as fsynced", got)
	}
	td.ok(td.d.Remove(".", "old", false))
	td.fsync(".")
	td.lose()
	if got := td.content("old"); got != "<absent>" {
		t.Fatalf("an unlink made durable came back: %q", got)
	}
	if kept := td.names("../kept"); len(kept) != 0 {
		t.Fatalf("kept aside after durable removal: %v", kept)
	}
}

// Redis 7 writes its AOF manifest to a temporary file, fsyncs it, renames
// it over the old one and fsyncs the directory.
func TestRenameSemantics(t *testing.T) {
	td := newDisk(t)
	m := td.create("manifest")
	td.write(m, "v1", 0)
	td.fsyncFile(m)
	td.fsync(".")

	tmp := td.create("temp-manifest")
	td.write(tmp, "v2", 0)
	td.fsyncFile(tmp)
	td.ok(td.d.Rename(".", "temp-manifest", ".", "manifest", false))
	td.lose()
	if got, names := td.content("manifest"), td.names("."); got != "v1" || !slices.Equal(names, []string{"manifest"}) {
		t.Fatalf("rename not made durable: manifest %q, names %v; want v1 and the temporary gone", got, names)
	}

	tmp = td.create("temp-manifest")
	td.write(tmp, "v3", 0)
	td.fsyncFile(tmp)
	td.ok(td.d.Rename(".", "temp-manifest", ".", "manifest", false))
	td.fsync(".")
	td.lose()
	if got, names := td.content("manifest"), td.names("."); got != "v3" || !slices.Equal(names, []string{"manifest"}) {
		t.Fatalf("rename made durable: manifest %q, names %v; want v3 alone", got, names)
	}

	// Across directories each side is durable with its own directory.
	td.mkdir("a")
	td.mkdir("b")
	td.fsync(".")
	x := td.create("a/x")
	td.write(x, "x", 0)
	td.fsyncFile(x)
	td.fsync("a")
	td.ok(td.d.Rename("a", "x", "b", "y", false))
	td.lose()
	if a, b := td.names("a"), td.names("b"); !slices.Equal(a, []string{"x"}) || len(b) != 0 {
		t.Fatalf("a %v, b %v after a rename neither directory made durable, want [x] and []", a, b)
	}
	// Either side's fsync makes the whole rename durable.
	for _, synced := range []string{"a", "b"} {
		from, to := "a", "b"
		if _, err := os.Stat(td.p("b/y")); err == nil {
			from, to = "b", "a"
		}
		name := map[string]string{"a": "x", "b": "y"}
		td.ok(td.d.Rename(from, name[from], to, name[to], false))
		td.fsync(synced)
		td.lose()
		if got := td.names(to); !slices.Equal(got, []string{name[to]}) || len(td.names(from)) != 0 {
			t.Fatalf("rename %s→%s, %s fsynced: %s holds %v, %s %v", from, to, synced, to, got, from, td.names(from))
		}
	}
	if err := td.d.Rename(".", "a", "a", "in-itself", false); err == nil {
		t.Fatal("a directory moved into itself")
	}
	if err := td.d.Rename(".", "manifest", ".", "a", true); err == nil {
		t.Fatal("RENAME_NOREPLACE replaced")
	}
}

func TestTruncateAndGrowAreTakenBack(t *testing.T) {
	td := newDisk(t)
	f := td.create("db")
	td.write(f, "0123456789", 0)
	td.fsyncFile(f)
	td.fsync(".")
	td.ok(td.d.Truncate(int(f.Fd()), 3))
	td.write(f, "abcdefghijklmnop", 2)
	td.ok(td.d.Allocate(int(f.Fd()), 0, 0, 4096))
	td.lose()
	if got := td.content("db"); got != "0123456789" {
		t.Fatalf("db holds %q, want 0123456789", got)
	}
}

func TestSyncAllMakesEverythingDurable(t *testing.T) {
	td := newDisk(t)
	td.mkdir("d")
	f := td.create("d/f")
	td.write(f, "all", 0)
	td.ok(td.d.SyncAll())
	if rep := td.lose(); rep.Writes != 0 || rep.Entries != 0 {
		t.Fatalf("lost %+v after sync", rep)
	}
	if got := td.content("d/f"); got != "all" {
		t.Fatalf("d/f holds %q after sync and a cut", got)
	}
}

func TestPowerOffAndArmedFsync(t *testing.T) {
	td := newDisk(t)
	f := td.create("f")
	td.ok(td.d.SyncAll())
	td.write(f, "before", 0)
	cut := td.d.Arm()
	ino, _, err := fileSize(int(f.Fd()))
	td.ok(err)
	synced := make(chan error, 1)
	go func() { synced <- td.d.Sync(ino) }()
	select {
	case <-cut:
	case <-time.After(5 * time.Second):
		t.Fatal("the armed fsync did not cut the power")
	}
	if _, err := td.d.WriteAt(int(f.Fd()), []byte("x"), 0); !errors.Is(err, ErrPowerOff) {
		t.Fatalf("write after the cut: %v, want %v", err, ErrPowerOff)
	}
	select {
	case err := <-synced:
		t.Fatalf("the fsync that met the cut returned (%v) before the thaw", err)
	case <-time.After(50 * time.Millisecond):
	}
	td.d.Thaw()
	if err := <-synced; !errors.Is(err, ErrPowerOff) {
		t.Fatalf("the fsync that met the cut returned %v, want %v", err, ErrPowerOff)
	}
	rep, err := td.d.Lose()
	td.ok(err)
	td.d.PowerOn()
	if got := td.content("f"); got != "" || rep.Bytes != 6 {
		t.Fatalf("f holds %q, report %+v: the armed fsync must not have made it durable", got, rep)
	}
	td.write(f, "after", 0)
}
