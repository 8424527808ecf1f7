package record

// A Source gives records one at a time to each, until each or the source
// fails: a slice's (Slice) or a file's, read as it goes (EachFinal), so
// that a writer of every record need not hold them.
type Source func(each func(*Record) error) error

// Slice is the Source of recs.
func Slice(recs []Record) Source {
	return func(each func(*Record) error) error {
		for i := range recs {
			if err := each(&recs[i]); err != nil {
				return err
			}
		}
		return nil
	}
}
