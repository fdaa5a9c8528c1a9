// Package powerfs is a disk that can lose power: a directory whose changes
// reach the backing directory at once, as they reach a page cache, but
// are durable only once fsynced, so that a power cut can take back
// everything that was not. It is what lets lockbench test the argument
// about fsync policies (appendfsync everysec against always, a delayed
// restart), which a process crash cannot: SIGKILL leaves every write in
// the kernel's page cache.
//
// The model is POSIX's, taken strictly:
//
//   - a file's data (writes, truncations, preallocation) is durable once
//     the file is fsynced (fsync or fdatasync);
//   - a directory entry (a file or directory created, removed or renamed)
//     is durable once its directory is fsynced; a rename from one
//     directory to another is durable on both sides once either directory
//     is fsynced, as a journalling file system commits it whole (POSIX
//     leaves it open, and an inode with two durable names or none would
//     be no state a real disk comes back in);
//   - whatever was on the disk when it was opened, or when Sync made it
//     all durable, is durable.
//
// Lose puts the backing directory back as it was at the last durable
// state: the names of every directory as of its last fsync (unlinked files
// come back from where they were kept, created ones go), and the data of
// every file as of its last fsync (each write since saved what it
// overwrote, and the saves are put back newest first).
//
// Hard links, symbolic links, device nodes and unnamed temporary files
// are refused (no lock service writes them), so that every inode has one
// name and can be found by it.
package powerfs

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// ErrPowerOff is what every operation returns between a power cut and
// the next power on: the disk answers nothing.
var ErrPowerOff = syscall.EIO

// Disk is a backing directory with the record of what in it is not yet
// durable. Its methods are safe for concurrent use.
type Disk struct {
	root string // what the file system serves
	// kept holds, by inode number, what was removed (unlinked, renamed
	// over) while a durable directory entry still names it.
	kept string

	mu sync.Mutex
	// files are the regular files written since their last fsync.
	files map[uint64]*fileChange
	// dirs are the entries, name to inode, of every directory changed
	// since its last fsync, as of that fsync.
	dirs map[uint64]map[string]uint64
	// renames are the renames between two directories that neither
	// directory's fsync has made durable yet.
	renames []rename
	// down is set from a power cut until the next power on.
	down bool
	// armed, when set, is closed by the next fsync, which then waits for
	// thaw and fails: the power failed just before it reached the disk.
	armed chan struct{}
	thaw  chan struct{}
}

// fileChange is what was done to one file since its last fsync.
type fileChange struct {
	size  int64  // the file's size at its last fsync
	saved []span // what each change overwrote of the durable size, oldest first
	// writes and bytes count the changes, for the report of a cut.
	writes int
	bytes  int64
}

type rename struct {
	ino              uint64
	from, to         uint64
	fromName, toName string
}

type span struct {
	off  int64
	data []byte
}

// Open opens the disk at dir: its files live in dir/root. Everything on
// it is durable: what a previous power cut left, and what a process crash
// of the server holding it left (the kernel's page cache survives that).
func Open(dir string) (*Disk, error) {
	d := &Disk{root: filepath.Join(dir, "root"), kept: filepath.Join(dir, "kept"), thaw: make(chan struct{})}
	if err := os.MkdirAll(d.root, 0o700); err != nil {
		return nil, fmt.Errorf("disk: %w", err)
	}
	if err := os.RemoveAll(d.kept); err != nil {
		return nil, fmt.Errorf("disk: %w", err)
	}
	if err := os.Mkdir(d.kept, 0o700); err != nil {
		return nil, fmt.Errorf("disk: %w", err)
	}
	d.forget()
	return d, nil
}

// Root is the directory the file system serves.
func (d *Disk) Root() string { return d.root }

func (d *Disk) forget() {
	d.files, d.dirs, d.renames = map[uint64]*fileChange{}, map[uint64]map[string]uint64{}, nil
}

func (d *Disk) path(rel string) string { return filepath.Join(d.root, rel) }

func (d *Disk) keptPath(ino uint64) string {
	return filepath.Join(d.kept, strconv.FormatUint(ino, 10))
}

func inoOf(path string) (uint64, os.FileMode, error) {
	var st unix.Stat_t
	if err := unix.Lstat(path, &st); err != nil {
		return 0, 0, err
	}
	return st.Ino, os.FileMode(st.Mode & unix.S_IFMT), nil
}

func isDir(mode os.FileMode) bool { return uint32(mode) == unix.S_IFDIR }

// entries reads a directory's names and inodes.
func entries(path string) (map[string]uint64, error) {
	des, err := os.ReadDir(path)
	if err != nil {
		return nil, err
	}
	out := make(map[string]uint64, len(des))
	for _, de := range des {
		ino, _, err := inoOf(filepath.Join(path, de.Name()))
		if err != nil {
			return nil, err
		}
		out[de.Name()] = ino
	}
	return out, nil
}

// changingDir is called before the entries of the directory rel change:
// the first change since its last fsync records its entries as they are,
// which are then the durable ones. It returns the directory's inode.
func (d *Disk) changingDir(rel string) (uint64, error) {
	ino, _, err := inoOf(d.path(rel))
	if err != nil {
		return 0, err
	}
	if _, ok := d.dirs[ino]; ok {
		return ino, nil
	}
	es, err := entries(d.path(rel))
	if err != nil {
		return 0, err
	}
	d.dirs[ino] = es
	return ino, nil
}

// changingFile is called before a file's data changes, with its size now:
// on the first change since its last fsync that is its durable size.
func (d *Disk) changingFile(ino uint64, size int64) *fileChange {
	c, ok := d.files[ino]
	if !ok {
		c = &fileChange{size: size}
		d.files[ino] = c
	}
	return c
}

func (d *Disk) lock() error {
	d.mu.Lock()
	if d.down {
		d.mu.Unlock()
		return ErrPowerOff
	}
	return nil
}

// Create makes the entry name in the directory dir with mk (a file or a
// directory), or lets mk open it when it exists.
// A new file's durable data is nothing, a new directory's durable entries
// none, until they are fsynced.
func (d *Disk) Create(dir, name string, mk func(path string) error) error {
	if err := d.lock(); err != nil {
		return err
	}
	defer d.mu.Unlock()
	p := filepath.Join(d.path(dir), name)
	_, _, err := inoOf(p)
	existed := err == nil
	if !existed {
		if _, err := d.changingDir(dir); err != nil {
			return err
		}
	}
	if err := mk(p); err != nil || existed {
		return err
	}
	ino, mode, err := inoOf(p)
	if err != nil {
		return err
	}
	if isDir(mode) {
		d.dirs[ino] = map[string]uint64{}
	} else {
		d.changingFile(ino, 0)
	}
	return nil
}

// Remove removes the entry name of the directory dir: a file (unlink) or,
// with dir set, an empty directory (rmdir). The inode is kept aside until
// no durable entry names it.
func (d *Disk) Remove(dir, name string, wantDir bool) error {
	if err := d.lock(); err != nil {
		return err
	}
	defer d.mu.Unlock()
	p := filepath.Join(d.path(dir), name)
	ino, mode, err := inoOf(p)
	switch {
	case err != nil:
		return err
	case wantDir && !isDir(mode):
		return syscall.ENOTDIR
	case !wantDir && isDir(mode):
		return syscall.EISDIR
	}
	if wantDir {
		if es, err := os.ReadDir(p); err != nil {
			return err
		} else if len(es) > 0 {
			return syscall.ENOTEMPTY
		}
	}
	if _, err := d.changingDir(dir); err != nil {
		return err
	}
	return os.Rename(p, d.keptPath(ino))
}

// Rename renames dir1/name1 to dir2/name2, replacing what dir2/name2 was
// (kept aside like a removed file) unless noReplace is set.
func (d *Disk) Rename(dir1, name1, dir2, name2 string, noReplace bool) error {
	if err := d.lock(); err != nil {
		return err
	}
	defer d.mu.Unlock()
	p1, p2 := filepath.Join(d.path(dir1), name1), filepath.Join(d.path(dir2), name2)
	ino1, mode1, err := inoOf(p1)
	if err != nil {
		return err
	}
	ino2, mode2, err := inoOf(p2)
	replaced := err == nil
	switch {
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return err
	case replaced && ino1 == ino2:
		return nil
	case replaced && noReplace:
		return syscall.EEXIST
	case replaced && isDir(mode1) && !isDir(mode2):
		return syscall.ENOTDIR
	case replaced && !isDir(mode1) && isDir(mode2):
		return syscall.EISDIR
	case isDir(mode1) && strings.HasPrefix(p2+"/", p1+"/"):
		return syscall.EINVAL
	}
	if replaced && isDir(mode2) {
		if es, err := os.ReadDir(p2); err != nil {
			return err
		} else if len(es) > 0 {
			return syscall.ENOTEMPTY
		}
	}
	from, err := d.changingDir(dir1)
	if err != nil {
		return err
	}
	to, err := d.changingDir(dir2)
	if err != nil {
		return err
	}
	if replaced {
		if err := os.Rename(p2, d.keptPath(ino2)); err != nil {
			return err
		}
	}
	if err := os.Rename(p1, p2); err != nil {
		return err
	}
	if from != to {
		d.renames = append(d.renames, rename{ino: ino1, from: from, to: to, fromName: name1, toName: name2})
	}
	return nil
}

// lockFile locks the disk, as lock does, and reads the inode and size of
// the file open as fd; the disk stays locked only when it returns nil.
func (d *Disk) lockFile(fd int) (uint64, int64, error) {
	if err := d.lock(); err != nil {
		return 0, 0, err
	}
	ino, size, err := fileSize(fd)
	if err != nil {
		d.mu.Unlock()
		return 0, 0, err
	}
	return ino, size, nil
}

// fileSize is the size of the file open as fd.
func fileSize(fd int) (uint64, int64, error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return 0, 0, err
	}
	return st.Ino, st.Size, nil
}

// save keeps what [off, end) of the durable part of a file holds now.
func (c *fileChange) save(fd int, off, end, size int64) error {
	end = min(end, c.size, size)
	if off >= end {
		return nil
	}
	buf := make([]byte, end-off)
	n, err := unix.Pread(fd, buf, off)
	if err != nil {
		return err
	}
	c.saved = append(c.saved, span{off: off, data: buf[:n]})
	return nil
}

// WriteAt writes data at off in the file open as fd.
func (d *Disk) WriteAt(fd int, data []byte, off int64) (int, error) {
	ino, size, err := d.lockFile(fd)
	if err != nil {
		return 0, err
	}
	defer d.mu.Unlock()
	c := d.changingFile(ino, size)
	if err := c.save(fd, off, off+int64(len(data)), size); err != nil {
		return 0, err
	}
	n, err := unix.Pwrite(fd, data, off)
	c.writes++
	c.bytes += int64(max(n, 0))
	return n, err
}

// Truncate sets the size of the file open as fd.
func (d *Disk) Truncate(fd int, size int64) error {
	ino, cur, err := d.lockFile(fd)
	if err != nil {
		return err
	}
	defer d.mu.Unlock()
	c := d.changingFile(ino, cur)
	if err := c.save(fd, size, cur, cur); err != nil {
		return err
	}
	c.writes++
	return unix.Ftruncate(fd, size)
}

// Allocate preallocates [off, off+n) of the file open as fd; with
// FALLOC_FL_KEEP_SIZE it changes nothing a reader sees. Modes that punch
// or zero a range are refused, so that a caller falls back to writes.
func (d *Disk) Allocate(fd int, mode uint32, off, n int64) error {
	if mode&^unix.FALLOC_FL_KEEP_SIZE != 0 {
		return syscall.EOPNOTSUPP
	}
	ino, cur, err := d.lockFile(fd)
	if err != nil {
		return err
	}
	defer d.mu.Unlock()
	if mode == 0 && off+n > cur {
		d.changingFile(ino, cur).writes++
	}
	return unix.Fallocate(fd, mode, off, n)
}

// Sync makes the data of the file or the entries of the directory with
// inode ino durable: fsync. When the power was set to fail at the next
// fsync (Arm), it fails here instead, and the call waits for the cut to
// be over.
func (d *Disk) Sync(ino uint64) error {
	if err := d.lock(); err != nil {
		return err
	}
	if d.armed != nil {
		close(d.armed)
		d.armed, d.down = nil, true
		thaw := d.thaw
		d.mu.Unlock()
		<-thaw
		return ErrPowerOff
	}
	defer d.mu.Unlock()
	delete(d.files, ino)
	if _, ok := d.dirs[ino]; ok {
		d.renamed(ino)
		delete(d.dirs, ino)
		return d.dropKept()
	}
	return nil
}

// renamed makes durable on both sides the renames between two directories
// of which the directory ino is one, as its fsync makes them durable.
func (d *Disk) renamed(ino uint64) {
	d.renames = slices.DeleteFunc(d.renames, func(r rename) bool {
		if r.from != ino && r.to != ino {
			return false
		}
		if es, ok := d.dirs[r.from]; ok && es[r.fromName] == r.ino {
			delete(es, r.fromName)
		}
		if es, ok := d.dirs[r.to]; ok {
			es[r.toName] = r.ino
		}
		return true
	})
}

// dropKept removes the inodes kept aside that no durable entry names any
// more.
func (d *Disk) dropKept() error {
	named := map[uint64]bool{}
	for _, es := range d.dirs {
		for _, ino := range es {
			named[ino] = true
		}
	}
	des, err := os.ReadDir(d.kept)
	if err != nil {
		return err
	}
	for _, de := range des {
		ino, err := strconv.ParseUint(de.Name(), 10, 64)
		if err != nil || named[ino] {
			continue
		}
		if err := os.RemoveAll(filepath.Join(d.kept, de.Name())); err != nil {
			return err
		}
		delete(d.files, ino)
	}
	return nil
}

// SyncAll makes everything durable, as sync(1) does.
func (d *Disk) SyncAll() error {
	if err := d.lock(); err != nil {
		return err
	}
	defer d.mu.Unlock()
	d.forget()
	return d.dropKept()
}

// Arm makes the power fail at the next fsync, before it reaches the disk:
// the moment when most is not durable. The channel is closed then.
func (d *Disk) Arm() <-chan struct{} {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.armed == nil {
		d.armed = make(chan struct{})
	}
	return d.armed
}

// Cut fails the power now, if an armed fsync has not already: from here
// every operation fails until PowerOn.
func (d *Disk) Cut() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.armed != nil {
		close(d.armed)
		d.armed = nil
	}
	d.down = true
}

// Thaw lets the fsync that met the power cut return its error. It is
// called once the processes that used the disk have been killed: a killed
// process waits for its pending file system call to be answered, and must
// not see this one succeed.
func (d *Disk) Thaw() {
	d.mu.Lock()
	defer d.mu.Unlock()
	close(d.thaw)
	d.thaw = make(chan struct{})
}

// PowerOn lets the disk answer again.
func (d *Disk) PowerOn() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.down = false
}

// Report is what a power cut took back.
type Report struct {
	// Writes counts the writes, truncations and preallocations that were
	// never fsynced, Bytes what those writes wrote.
	Writes int   `json:"writes"`
	Bytes  int64 `json:"bytes"`
	// Entries counts the directory entries that changed since their
	// directory's last fsync: names that went and came back.
	Entries int `json:"entries"`
	// Files are the files whose size changed, with their sizes before and
	// after the cut.
	Files []FileChange `json:"files,omitempty"`
}

// FileChange is one file's size before and after a cut; a size of -1
// means the file did not exist.
type FileChange struct {
	Path   string `json:"path"`
	Before int64  `json:"before"`
	After  int64  `json:"after"`
}

// String is one line for a log.
func (r Report) String() string {
	var parts []string
	for _, f := range r.Files {
		parts = append(parts, fmt.Sprintf("%s %s → %s", f.Path, sizeWord(f.Before), sizeWord(f.After)))
	}
	s := fmt.Sprintf("dropped %d writes never fsynced (%d bytes) and %d directory entries never made durable", r.Writes, r.Bytes, r.Entries)
	if len(parts) > 0 {
		s += "; " + strings.Join(parts, ", ")
	}
	return s
}

func sizeWord(n int64) string {
	if n < 0 {
		return "absent"
	}
	return fmt.Sprintf("%d bytes", n)
}

// where is an inode's place in a tree: its directory's inode and its name.
type where struct {
	parent uint64
	name   string
	path   string
	depth  int
	dir    bool
}

// Lose puts the disk back as it was at its last durable state (see the
// package comment). The disk must be down (Cut) and no process may hold
// a file of it open.
func (d *Disk) Lose() (Report, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	var rep Report
	rootIno, _, err := inoOf(d.root)
	if err != nil {
		return rep, err
	}
	// Where every inode is now: in the tree, or kept aside.
	live := map[uint64]where{}
	children := map[uint64]map[string]uint64{}
	var walk func(ino uint64, path string, depth int) error
	walk = func(ino uint64, path string, depth int) error {
		es, err := entries(path)
		if err != nil {
			return err
		}
		children[ino] = es
		for name, c := range es {
			p := filepath.Join(path, name)
			_, mode, err := inoOf(p)
			if err != nil {
				return err
			}
			live[c] = where{parent: ino, name: name, path: p, depth: depth + 1, dir: isDir(mode)}
			if isDir(mode) {
				if err := walk(c, p, depth+1); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if err := walk(rootIno, d.root, 0); err != nil {
		return rep, fmt.Errorf("lose: %w", err)
	}
	keptIno, _, err := inoOf(d.kept)
	if err != nil {
		return rep, err
	}
	if err := walk(keptIno, d.kept, 0); err != nil {
		return rep, fmt.Errorf("lose: %w", err)
	}
	sizes := map[uint64]int64{}
	for ino, w := range live {
		if !w.dir && w.parent != keptIno {
			if fi, err := os.Lstat(w.path); err == nil {
				sizes[ino] = fi.Size()
			}
		}
	}

	// Where every inode must be: each changed directory holds its durable
	// entries, every other one what it holds now.
	want := map[uint64]where{}
	var place func(ino uint64, path string, depth int) error
	place = func(ino uint64, path string, depth int) error {
		es, changed := d.dirs[ino]
		if !changed {
			es = children[ino]
		} else {
			rep.Entries += changedEntries(es, children[ino])
		}
		for name, c := range es {
			w, ok := live[c]
			if !ok {
				return fmt.Errorf("lose: inode %d, durable as %s, is nowhere", c, filepath.Join(path, name))
			}
			if _, twice := want[c]; twice {
				return fmt.Errorf("lose: inode %d has two names", c)
			}
			p := filepath.Join(path, name)
			want[c] = where{parent: ino, name: name, path: p, depth: depth + 1, dir: w.dir}
			if w.dir {
				if err := place(c, p, depth+1); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if err := place(rootIno, d.root, 0); err != nil {
		return rep, err
	}

	// Move every misplaced inode aside, deepest first so that a path
	// still holds when it is moved, then to its place, shallowest first so
	// that its directory is there.
	var moved []uint64
	for ino, w := range live {
		if v, ok := want[ino]; !ok || v.parent != w.parent || v.name != w.name {
			moved = append(moved, ino)
		}
	}
	slices.SortFunc(moved, func(a, b uint64) int { return cmp.Compare(live[b].depth, live[a].depth) })
	for _, ino := range moved {
		if w := live[ino]; w.path != d.keptPath(ino) {
			if err := os.Rename(w.path, d.keptPath(ino)); err != nil {
				return rep, fmt.Errorf("lose: %w", err)
			}
		}
	}
	slices.SortFunc(moved, func(a, b uint64) int { return cmp.Compare(want[a].depth, want[b].depth) })
	for _, ino := range moved {
		if w, ok := want[ino]; ok {
			if err := os.Rename(d.keptPath(ino), w.path); err != nil {
				return rep, fmt.Errorf("lose: %w", err)
			}
		}
	}

	// Then every file's data as of its last fsync.
	for ino, c := range d.files {
		rep.Writes += c.writes
		rep.Bytes += c.bytes
		w, ok := want[ino]
		if !ok {
			continue
		}
		if err := c.undo(w.path); err != nil {
			return rep, fmt.Errorf("lose: %w", err)
		}
	}
	for ino, w := range live {
		v, ok := want[ino]
		if w.dir || (w.parent == keptIno && !ok) {
			continue
		}
		before, wasLive := sizes[ino]
		if !wasLive {
			before = -1
		}
		after := int64(-1)
		if ok {
			fi, err := os.Lstat(v.path)
			if err != nil {
				return rep, fmt.Errorf("lose: %w", err)
			}
			after = fi.Size()
		}
		if before != after {
			rel, _ := filepath.Rel(d.root, cmp.Or(v.path, w.path))
			rep.Files = append(rep.Files, FileChange{Path: rel, Before: before, After: after})
		}
	}
	slices.SortFunc(rep.Files, func(a, b FileChange) int { return cmp.Compare(a.Path, b.Path) })
	d.forget()
	return rep, d.dropKept()
}

// changedEntries counts the names on which two versions of a directory
// differ.
func changedEntries(a, b map[string]uint64) int {
	n := 0
	for name, ino := range a {
		if b[name] != ino {
			n++
		}
	}
	for name := range b {
		if _, ok := a[name]; !ok {
			n++
		}
	}
	return n
}

// undo puts the saved spans back, newest first, so that the oldest, which
// holds what the last fsync left, wins, and cuts the file to its durable
// size.
func (c *fileChange) undo(path string) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	for i := len(c.saved) - 1; i >= 0; i-- {
		if _, err := f.WriteAt(c.saved[i].data, c.saved[i].off); err != nil {
			return err
		}
	}
	return f.Truncate(c.size)
}
