package baseline

import (
	"bufio"
	"encoding/gob"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/tokbench/tokbench/record"
)

// Builder makes the baselines of a fleet's hardware classes from its
// records, holding a few classes' history at a time. Each record's run
// waits in a spill file (unlinked in TMPDIR: a signal leaves nothing
// behind) until its class is built: a point keeps 50 runs, and a fleet's
// 40 classes of 500 points, held at once, took 217 MB at 10^6 records,
// 2.7 times what they took at 10^5. The classes share spillFiles files
// (a class's runs all in one of them): whatever the classes, the builder
// holds that many descriptors, and reads each file once, when the first
// of its classes is built, keeping its other classes' runs for their
// turn; memory grows with a file's share of the runs, not the fleet's.
type Builder struct {
	dir        string // the baselines' folder
	perThreads []string
	classes    map[string]*pending
	order      []string
	spills     [spillFiles]spill
}

// spillFiles is how many files the runs wait in.
const spillFiles = 16

// spill is one spill file and, once read back, its classes' runs.
type spill struct {
	file *os.File // nil: no runs yet, or read back
	w    *bufio.Writer
	enc  *gob.Encoder
	runs map[uint32][]spilledRun // by class, once read back
}

// pending is a class's runs waiting to be built: its points, by index.
type pending struct {
	n        uint32 // the class's index, in order first seen
	points   []pointName
	index    map[string]uint32 // by identity
	software software          // the newest run's
	runs     bool              // some wait in its spill file
}

type pointName struct{ identity, test, model string }

// spilledRun is a record's run in a spill file: what a point keeps of it.
type spilledRun struct {
	Class   uint32 // pending.n
	Point   uint32 // pending.points' index
	Host    string
	When    time.Time // gob keeps its zone's offset, as JSON does
	Samples []float64
}

// NewBuilder builds on the baselines in dir.
func NewBuilder(dir string) *Builder {
	return &Builder{dir: dir, perThreads: perThreadsFiles(dir), classes: map[string]*pending{}}
}

// Include makes a class one the builder builds (a class with quality
// figures but no runs), checking the baseline it builds on now, not after
// every record is read.
func (b *Builder) Include(class string) error {
	_, err := b.include(class)
	return err
}

func (b *Builder) include(class string) (*pending, error) {
	if c := b.classes[class]; c != nil {
		return c, nil
	}
	if _, err := load(b.dir, class, b.perThreads); err != nil {
		return nil, err
	}
	c := &pending{n: uint32(len(b.order)), index: map[string]uint32{}}
	b.classes[class] = c
	b.order = append(b.order, class)
	return c, nil
}

// Classes are the classes included, in the order first seen.
func (b *Builder) Classes() []string { return b.order }

// Add puts a record's run in its class (a failed record or one without
// samples adds nothing).
func (b *Builder) Add(r *record.Record) error {
	if !measured(r) {
		return nil
	}
	c, err := b.include(r.Class())
	if err != nil {
		return err
	}
	sp := &b.spills[c.n%spillFiles]
	if sp.file == nil {
		if sp.runs != nil {
			return fmt.Errorf("class %s: a run added after its spill file was read back", r.Class())
		}
		if err := sp.open(); err != nil {
			return err
		}
	}
	id := identity(r)
	i, ok := c.index[id]
	if !ok {
		i = uint32(len(c.points))
		c.index[id] = i
		c.points = append(c.points, pointName{id, r.Test, name(r)})
	}
	c.software, c.runs = softwareOf(r), true
	if err := sp.enc.Encode(spilledRun{Class: c.n, Point: i, Host: r.HostName, When: r.TestTime, Samples: r.SamplesTs}); err != nil {
		return fmt.Errorf("keep a run of class %s in %s: %w (free space there, or set TMPDIR to another folder)", r.Class(), filepath.Dir(sp.file.Name()), err)
	}
	return nil
}

func (sp *spill) open() (err error) {
	if sp.file, err = os.CreateTemp("", "tokbench-baseline-*"); err != nil {
		return fmt.Errorf("a file for the runs: %w (set TMPDIR to a writable folder)", err)
	}
	// Unlinked: read and written through sp.file alone, and nothing is
	// left behind by a signal that ends the process.
	os.Remove(sp.file.Name())
	sp.w = bufio.NewWriterSize(sp.file, 64<<10)
	sp.enc = gob.NewEncoder(sp.w)
	return nil
}

// readBack reads the spill file whole into its classes' runs, in the
// order they were added, and lets the file go.
func (sp *spill) readBack() error {
	where := filepath.Dir(sp.file.Name())
	defer func() {
		sp.file.Close()
		sp.file = nil
	}()
	if err := sp.w.Flush(); err != nil {
		return fmt.Errorf("keep the runs in %s: %w (free space there, or set TMPDIR to another folder)", where, err)
	}
	if _, err := sp.file.Seek(0, io.SeekStart); err != nil {
		return err
	}
	sp.runs = map[uint32][]spilledRun{}
	dec := gob.NewDecoder(bufio.NewReader(sp.file))
	for {
		var run spilledRun // new each time: gob leaves a field the stream omits (a zero) as it was
		err := dec.Decode(&run)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read back the runs from %s: %w", where, err)
		}
		sp.runs[run.Class] = append(sp.runs[run.Class], run)
	}
}

// Build is a class's baseline: the one in the folder (or a new one) with
// the class's runs added, in the order they were added, and its ranges
// set. The class's runs are let go.
func (b *Builder) Build(class string, minEffect float64) (*File, error) {
	f, err := load(b.dir, class, b.perThreads)
	if err != nil {
		return nil, err
	}
	if f == nil {
		f = NewFile(class)
	}
	c := b.classes[class]
	if c == nil || !c.runs {
		return f, nil
	}
	sp := &b.spills[c.n%spillFiles]
	if sp.file != nil {
		if err := sp.readBack(); err != nil {
			return nil, fmt.Errorf("class %s: %w", class, err)
		}
	}
	runs := sp.runs[c.n]
	delete(sp.runs, c.n)
	c.runs = false
	points := make([]*Point, len(c.points))
	for i, n := range c.points {
		points[i] = f.point(n.identity, n.test, n.model)
	}
	for _, run := range runs {
		if int(run.Point) >= len(points) {
			return nil, fmt.Errorf("read back the runs of class %s: a run of point %d, of %d", class, run.Point, len(points))
		}
		points[run.Point].add(run.Host, run.When, run.Samples, minEffect)
	}
	f.setSoftware(c.software)
	f.Updated = time.Now().UTC().Truncate(time.Second)
	f.Settle()
	return f, nil
}

// Close lets go of the spill files not read back.
func (b *Builder) Close() {
	for i := range b.spills {
		if sp := &b.spills[i]; sp.file != nil {
			sp.file.Close()
		}
	}
}
