package record

import (
	"bufio"
	"cmp"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/tokbench/tokbench/internal/sqlite"
)

// SQL text is read as the data it claims to be, never run: the
// statements llama-bench's -o sql and tokbench's write (CREATE TABLE of
// plain columns, INSERT of literal values, BEGIN/COMMIT) are parsed here
// and anything else is refused with its line. A shared results file can
// then neither touch the user's files nor hang the reader.

// maxLiteral bounds one value of a SQL file (a tokbench record is a few
// KB): a file that is one endless string is refused, not held.
const maxLiteral = 16 << 20

// sqlTable is a table a SQL file makes: its columns, and its rows when it
// is one tokbench reads.
type sqlTable struct {
	cols   []string
	rows   []sqlite.Row
	nextID int64
	keep   bool
}

// sqlTextRows reads the rows of llama_bench in a SQL file, each with its
// rowid and, where the tokbench table links a row to it, tokbench's
// record.
func sqlTextRows(path string, r io.Reader) ([]sqlite.Row, error) {
	p := sqlParser{lex: sqlLexer{r: bufio.NewReader(r), line: 1}, tables: map[string]*sqlTable{}}
	if err := p.parse(); err != nil {
		return nil, fmt.Errorf("%s line %d: %w", path, p.lex.tokLine, err)
	}
	bench := p.tables[BenchTable]
	if bench == nil {
		return nil, fmt.Errorf("%s: no %s table", path, BenchTable)
	}
	if own := p.tables[OwnTable]; own != nil {
		attachOwn(bench.rows, own.rows)
	}
	return bench.rows, nil
}

type sqlParser struct {
	lex    sqlLexer
	tables map[string]*sqlTable
	lastID int64 // last_insert_rowid()
}

// errNotOurs says what the reader takes, for any statement it refuses.
var errNotOurs = errors.New("tokbench reads SQL text as data and runs none of it: only llama-bench's and tokbench's CREATE TABLE and INSERT statements (literal values), BEGIN and COMMIT are taken")

func (p *sqlParser) parse() error {
	for {
		t, err := p.lex.next()
		if err != nil {
			return err
		}
		switch {
		case t.kind == tokEOF:
			return nil
		case t.is(";"):
			continue
		case t.word("CREATE"):
			err = p.create()
		case t.word("INSERT"):
			err = p.insert()
		case t.word("BEGIN"), t.word("COMMIT"), t.word("END"):
			err = p.transaction()
		default:
			return fmt.Errorf("%q: %w", t.text, errNotOurs)
		}
		if err != nil {
			return err
		}
	}
}

// expect reads the next token and checks it is one of want (words match
// case-insensitively).
func (p *sqlParser) expect(want ...string) (sqlToken, error) {
	t, err := p.lex.next()
	if err != nil {
		return t, err
	}
	for _, w := range want {
		if t.is(w) || t.word(w) {
			return t, nil
		}
	}
	return t, fmt.Errorf("%q where %s was expected: %w", t.text, strings.Join(want, " or "), errNotOurs)
}

func (p *sqlParser) name() (string, error) {
	t, err := p.lex.next()
	if err != nil {
		return "", err
	}
	if t.kind != tokIdent {
		return "", fmt.Errorf("%q where a name was expected: %w", t.text, errNotOurs)
	}
	return t.text, nil
}

func (p *sqlParser) transaction() error {
	t, err := p.lex.next()
	if err != nil {
		return err
	}
	for t.word("TRANSACTION") || t.word("DEFERRED") || t.word("IMMEDIATE") || t.word("EXCLUSIVE") {
		if t, err = p.lex.next(); err != nil {
			return err
		}
	}
	if !t.is(";") && t.kind != tokEOF {
		return fmt.Errorf("%q after BEGIN/COMMIT: %w", t.text, errNotOurs)
	}
	return nil
}

// create reads CREATE TABLE [IF NOT EXISTS] name (column type ..., ...).
// A column's type may be words and a size in parentheses; constraints
// with expressions, CREATE TABLE ... AS SELECT, views, triggers and
// indexes are refused.
func (p *sqlParser) create() error {
	if _, err := p.expect("TABLE"); err != nil {
		return err
	}
	t, err := p.lex.next()
	if err != nil {
		return err
	}
	ifNotExists := false
	if t.word("IF") {
		if _, err := p.expect("NOT"); err != nil {
			return err
		}
		if _, err := p.expect("EXISTS"); err != nil {
			return err
		}
		ifNotExists = true
		if t, err = p.lex.next(); err != nil {
			return err
		}
	}
	if t.kind != tokIdent {
		return fmt.Errorf("%q where a table name was expected: %w", t.text, errNotOurs)
	}
	table := t.text
	if _, err := p.expect("("); err != nil {
		return err
	}
	var cols []string
	for {
		col, err := p.name()
		if err != nil {
			return err
		}
		cols = append(cols, col)
		// The column's type: words, and numbers in parentheses.
		depth := 0
		for {
			t, err := p.lex.next()
			if err != nil {
				return err
			}
			switch {
			case t.kind == tokIdent && !t.quoted, t.kind == tokNumber && depth > 0:
				continue
			case t.is("("):
				depth++
				continue
			case t.is(")") && depth > 0:
				depth--
				continue
			case t.is(",") && depth > 0:
				continue
			}
			if t.is(",") {
				break
			}
			if t.is(")") {
				goto done
			}
			return fmt.Errorf("%q in column %s of table %s: %w", t.text, col, table, errNotOurs)
		}
	}
done:
	if _, err := p.expect(";"); err != nil {
		return err
	}
	if p.tables[table] != nil {
		if ifNotExists {
			return nil
		}
		return fmt.Errorf("table %s is made twice", table)
	}
	p.tables[table] = &sqlTable{cols: cols, nextID: 1, keep: table == BenchTable || table == OwnTable}
	return nil
}

// insert reads INSERT INTO name [(columns)] VALUES (values), ...; a value
// is a literal (text, number, NULL, a blob), or last_insert_rowid() as
// tokbench's rows link to llama-bench's.
func (p *sqlParser) insert() error {
	if _, err := p.expect("INTO"); err != nil {
		return err
	}
	table, err := p.name()
	if err != nil {
		return err
	}
	tb := p.tables[table]
	if tb == nil {
		return fmt.Errorf("INSERT INTO %s, a table the file does not make", table)
	}
	t, err := p.expect("(", "VALUES", "SELECT")
	if err != nil {
		return err
	}
	cols := tb.cols
	if t.is("(") {
		cols = nil
		for {
			c, err := p.name()
			if err != nil {
				return err
			}
			if !slices.Contains(tb.cols, c) {
				return fmt.Errorf("table %s has no column %s", table, c)
			}
			cols = append(cols, c)
			if t, err = p.expect(",", ")"); err != nil {
				return err
			}
			if t.is(")") {
				break
			}
		}
		if t, err = p.expect("VALUES", "SELECT"); err != nil {
			return err
		}
	}
	if t.word("SELECT") {
		return p.insertIfLinked(table, tb, cols)
	}
	for {
		if _, err := p.expect("("); err != nil {
			return err
		}
		row, err := p.values(table, cols, ")")
		if err != nil {
			return err
		}
		p.add(tb, row)
		t, err := p.expect(",", ";")
		if err != nil {
			return err
		}
		if t.is(";") {
			return nil
		}
	}
}

// insertIfLinked reads the rest of tokbench's linked INSERT, from after
// its SELECT: values, then WHERE EXISTS (SELECT 1 FROM table WHERE rowid =
// last_insert_rowid() AND column = value ...), and adds the row only when
// the row it links to is there and holds those values, as SQLite does.
func (p *sqlParser) insertIfLinked(table string, tb *sqlTable, cols []string) error {
	row, err := p.values(table, cols, "WHERE")
	if err != nil {
		return err
	}
	for _, w := range []string{"EXISTS", "(", "SELECT"} {
		if _, err := p.expect(w); err != nil {
			return err
		}
	}
	if one, err := p.value(); err != nil || one != "1" {
		return cmp.Or(err, fmt.Errorf("SELECT %v in a link: %w", one, errNotOurs))
	}
	if _, err := p.expect("FROM"); err != nil {
		return err
	}
	other, err := p.name()
	if err != nil {
		return err
	}
	for _, w := range []string{"WHERE", "rowid", "="} {
		if _, err := p.expect(w); err != nil {
			return err
		}
	}
	if v, err := p.value(); err != nil || v != p.lastID {
		return cmp.Or(err, fmt.Errorf("a link to a row other than the one inserted before: %w", errNotOurs))
	}
	var linked sqlite.Row
	if o := p.tables[other]; o != nil && len(o.rows) > 0 && o.rows[len(o.rows)-1]["rowid"] == p.lastID {
		linked = o.rows[len(o.rows)-1]
	}
	for {
		t, err := p.expect("AND", ")")
		if err != nil {
			return err
		}
		if t.is(")") {
			break
		}
		c, err := p.name()
		if err != nil {
			return err
		}
		if _, err := p.expect("="); err != nil {
			return err
		}
		v, err := p.value()
		if err != nil {
			return err
		}
		if linked != nil && fmt.Sprint(linked[c]) != fmt.Sprint(v) {
			linked = nil
		}
	}
	if _, err := p.expect(";"); err != nil {
		return err
	}
	if linked != nil {
		p.add(tb, row)
	}
	return nil
}

// values reads one value per column of cols, separated by commas, up to
// and including end (")" after VALUES, WHERE after a linked SELECT).
func (p *sqlParser) values(table string, cols []string, end string) (sqlite.Row, error) {
	row := sqlite.Row{}
	for i := 0; ; i++ {
		v, err := p.value()
		if err != nil {
			return nil, err
		}
		if i >= len(cols) {
			return nil, fmt.Errorf("more values than the %d columns of %s", len(cols), table)
		}
		row[cols[i]] = v
		t, err := p.expect(",", end)
		if err != nil {
			return nil, err
		}
		if !t.is(",") {
			if i+1 != len(cols) {
				return nil, fmt.Errorf("%d values for the %d columns of %s", i+1, len(cols), table)
			}
			return row, nil
		}
	}
}

// add inserts row into tb as SQLite would: the next rowid, which
// last_insert_rowid() then gives.
func (p *sqlParser) add(tb *sqlTable, row sqlite.Row) {
	row["rowid"] = tb.nextID
	p.lastID = tb.nextID
	tb.nextID++
	if tb.keep {
		tb.rows = append(tb.rows, row)
	}
}

// value reads one literal value.
func (p *sqlParser) value() (any, error) {
	t, err := p.lex.next()
	if err != nil {
		return nil, err
	}
	switch {
	case t.kind == tokString, t.kind == tokNumber, t.kind == tokBlob:
		return t.text, nil
	case t.is("-"), t.is("+"):
		n, err := p.lex.next()
		if err != nil {
			return nil, err
		}
		if n.kind != tokNumber {
			return nil, fmt.Errorf("%q after a sign: %w", n.text, errNotOurs)
		}
		if t.is("-") {
			return "-" + n.text, nil
		}
		return n.text, nil
	case t.word("NULL"):
		return nil, nil
	case t.word("last_insert_rowid"):
		if _, err := p.expect("("); err != nil {
			return nil, err
		}
		_, err := p.expect(")")
		return p.lastID, err
	case t.word("CAST"):
		// CAST(X'..' AS TEXT): how tokbench writes a value with a NUL.
		if _, err := p.expect("("); err != nil {
			return nil, err
		}
		v, err := p.lex.next()
		if err != nil {
			return nil, err
		}
		if v.kind != tokBlob && v.kind != tokString {
			return nil, fmt.Errorf("CAST of %q: %w", v.text, errNotOurs)
		}
		if _, err := p.expect("AS"); err != nil {
			return nil, err
		}
		if _, err := p.expect("TEXT"); err != nil {
			return nil, err
		}
		_, err = p.expect(")")
		return v.text, err
	}
	return nil, fmt.Errorf("%q where a value was expected: %w", t.text, errNotOurs)
}

const (
	tokEOF = iota
	tokIdent
	tokString
	tokBlob
	tokNumber
	tokPunct
)

type sqlToken struct {
	kind   int
	text   string
	quoted bool // an identifier in quotes: never a keyword
}

func (t sqlToken) is(p string) bool { return t.kind == tokPunct && t.text == p }
func (t sqlToken) word(w string) bool {
	return t.kind == tokIdent && !t.quoted && strings.EqualFold(t.text, w)
}

// sqlLexer splits SQL text into tokens, reading it a byte at a time.
type sqlLexer struct {
	r       *bufio.Reader
	line    int
	tokLine int // the line the last token started on
}

func (l *sqlLexer) read() (byte, error) {
	c, err := l.r.ReadByte()
	if c == '\n' {
		l.line++
	}
	return c, err
}

func (l *sqlLexer) unread(c byte) {
	l.r.UnreadByte()
	if c == '\n' {
		l.line--
	}
}

func (l *sqlLexer) next() (sqlToken, error) {
	for {
		c, err := l.read()
		if err == io.EOF {
			l.tokLine = l.line
			return sqlToken{kind: tokEOF, text: "end of file"}, nil
		}
		if err != nil {
			return sqlToken{}, err
		}
		l.tokLine = l.line
		switch {
		case c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f' || c == '\v':
			continue
		case c == '-':
			if n, err := l.read(); err == nil && n == '-' {
				if _, err := l.r.ReadSlice('\n'); err == nil {
					l.line++
				}
				for errors.Is(err, bufio.ErrBufferFull) { // a long comment
					if _, err = l.r.ReadSlice('\n'); err == nil {
						l.line++
					}
				}
				continue
			} else if err == nil {
				l.unread(n)
			}
			return sqlToken{kind: tokPunct, text: "-"}, nil
		case c == '/':
			if n, err := l.read(); err == nil && n == '*' {
				if err := l.blockComment(); err != nil {
					return sqlToken{}, err
				}
				continue
			}
			return sqlToken{}, fmt.Errorf("'/': %w", errNotOurs)
		case c == '(' || c == ')' || c == ',' || c == ';' || c == '+' || c == '=':
			return sqlToken{kind: tokPunct, text: string(c)}, nil
		case c == '\'':
			s, err := l.quoted('\'')
			return sqlToken{kind: tokString, text: s}, err
		case c == '"' || c == '`':
			s, err := l.quoted(c)
			return sqlToken{kind: tokIdent, text: s, quoted: true}, err
		case c == '[':
			s, err := l.quoted(']')
			return sqlToken{kind: tokIdent, text: s, quoted: true}, err
		case (c == 'x' || c == 'X') && l.peek() == '\'':
			l.read()
			s, err := l.quoted('\'')
			if err != nil {
				return sqlToken{}, err
			}
			b, err := hex.DecodeString(s)
			if err != nil {
				return sqlToken{}, fmt.Errorf("a blob literal that is not hex: %w", err)
			}
			return sqlToken{kind: tokBlob, text: string(b)}, nil
		case c == '_' || isLetter(c):
			return sqlToken{kind: tokIdent, text: l.while(c, func(c byte) bool { return c == '_' || c == '$' || isLetter(c) || isDigit(c) })}, nil
		case isDigit(c) || c == '.':
			prev := c
			return sqlToken{kind: tokNumber, text: l.while(c, func(c byte) bool {
				ok := isDigit(c) || c == '.' || c == 'e' || c == 'E' || ((c == '-' || c == '+') && (prev == 'e' || prev == 'E'))
				prev = c
				return ok
			})}, nil
		}
		return sqlToken{}, fmt.Errorf("unexpected character %q: %w", c, errNotOurs)
	}
}

func (l *sqlLexer) peek() byte {
	b, err := l.r.Peek(1)
	if err != nil {
		return 0
	}
	return b[0]
}

// while reads the token that starts with c while ok holds (64 KiB at most).
func (l *sqlLexer) while(c byte, ok func(byte) bool) string {
	b := []byte{c}
	for len(b) < 64<<10 {
		n, err := l.read()
		if err != nil {
			break
		}
		if !ok(n) {
			l.unread(n)
			break
		}
		b = append(b, n)
	}
	return string(b)
}

// quoted reads up to the closing quote (a doubled one is the quote
// itself), at most maxLiteral bytes.
func (l *sqlLexer) quoted(end byte) (string, error) {
	var b strings.Builder
	for {
		c, err := l.read()
		if err != nil {
			return "", fmt.Errorf("a quoted value that never ends (from line %d)", l.tokLine)
		}
		if c == end {
			if end == ']' || l.peek() != end {
				return b.String(), nil
			}
			l.read()
		}
		if b.Len() >= maxLiteral {
			return "", fmt.Errorf("a value over %d MiB: not a results file", maxLiteral>>20)
		}
		b.WriteByte(c)
	}
}

func (l *sqlLexer) blockComment() error {
	prev := byte(0)
	for {
		c, err := l.read()
		if err != nil {
			return fmt.Errorf("a comment that never ends (from line %d)", l.tokLine)
		}
		if prev == '*' && c == '/' {
			return nil
		}
		prev = c
	}
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80 }
func isDigit(c byte) bool  { return c >= '0' && c <= '9' }
