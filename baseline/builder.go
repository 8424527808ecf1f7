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
// records, holding one class's history at a time. Each record's run waits
// in its class's spill file (unlinked in TMPDIR: a signal leaves nothing
// behind) until its class is built: a point keeps 50 runs, and a fleet's 40 classes of 500 points,
// held at once, took 217 MB at 10^6 records, 2.7 times what they took at
// 10^5; one class at a time, memory grows with the largest class's
// points, not with the fleet's.
type Builder struct {
	dir     string // the baselines' folder
	classes map[string]*pending
	order   []string
}

// pending is a class's runs waiting to be built: its points, by index,
// and its spill file of runs.
type pending struct {
	points   []pointName
	index    map[string]uint32 // by identity
	software software          // the newest run's
	file     *os.File          // nil: no runs
	w        *bufio.Writer
	enc      *gob.Encoder
}

type pointName struct{ identity, test, model string }

// spilledRun is a record's run in a spill file: what a point keeps of it.
type spilledRun struct {
	Point   uint32 // pending.points' index
	Host    string
	When    time.Time // gob keeps its zone's offset, as JSON does
	Samples []float64
}

// NewBuilder builds on the baselines in dir.
func NewBuilder(dir string) *Builder {
	return &Builder{dir: dir, classes: map[string]*pending{}}
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
	if _, err := Load(b.dir, class); err != nil {
		return nil, err
	}
	c := &pending{index: map[string]uint32{}}
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
	if c.file == nil {
		if err := b.open(c); err != nil {
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
	c.software = softwareOf(r)
	if err := c.enc.Encode(spilledRun{Point: i, Host: r.HostName, When: r.TestTime, Samples: r.SamplesTs}); err != nil {
		return fmt.Errorf("keep a run of class %s in %s: %w (free space there, or set TMPDIR to another folder)", r.Class(), filepath.Dir(c.file.Name()), err)
	}
	return nil
}

func (b *Builder) open(c *pending) (err error) {
	if c.file, err = os.CreateTemp("", "tokbench-baseline-*"); err != nil {
		return fmt.Errorf("a file for the runs: %w (set TMPDIR to a writable folder)", err)
	}
	// Unlinked: read and written through c.file alone, and nothing is
	// left behind by a signal that ends the process.
	os.Remove(c.file.Name())
	c.w = bufio.NewWriterSize(c.file, 16<<10) // a fleet has tens of classes, each a buffer
	c.enc = gob.NewEncoder(c.w)
	return nil
}

// Build is a class's baseline: the one in the folder (or a new one) with
// the class's runs added, in the order they were added, and its ranges
// set. The runs' spill file is let go.
func (b *Builder) Build(class string, minEffect float64) (*File, error) {
	f, err := Load(b.dir, class)
	if err != nil {
		return nil, err
	}
	if f == nil {
		f = NewFile(class)
	}
	c := b.classes[class]
	if c == nil || c.file == nil {
		return f, nil
	}
	defer func() {
		c.file.Close()
		c.file = nil
	}()
	if err := c.w.Flush(); err != nil {
		return nil, fmt.Errorf("keep the runs of class %s in %s: %w (free space there, or set TMPDIR to another folder)", class, filepath.Dir(c.file.Name()), err)
	}
	if _, err := c.file.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	points := make([]*Point, len(c.points))
	for i, n := range c.points {
		points[i] = f.point(n.identity, n.test, n.model)
	}
	dec := gob.NewDecoder(bufio.NewReader(c.file))
	for {
		var run spilledRun // new each time: gob leaves a field the stream omits (a zero) as it was
		err := dec.Decode(&run)
		if errors.Is(err, io.EOF) {
			break
		}
		if err == nil && int(run.Point) >= len(points) {
			err = fmt.Errorf("a run of point %d, of %d", run.Point, len(points))
		}
		if err != nil {
			return nil, fmt.Errorf("read back the runs of class %s from %s: %w", class, filepath.Dir(c.file.Name()), err)
		}
		points[run.Point].add(run.Host, run.When, run.Samples, minEffect)
	}
	f.setSoftware(c.software)
	f.Updated = time.Now().UTC().Truncate(time.Second)
	f.Settle()
	return f, nil
}

// Close lets go of the spill files of the classes not built.
func (b *Builder) Close() {
	for _, c := range b.classes {
		if c.file != nil {
			c.file.Close()
		}
	}
}
