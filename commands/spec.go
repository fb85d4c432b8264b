package commands

import "github.com/rlserver/rlserver/engine"

// Route says who answers a command.
type Route uint8

// The routes.
const (
	// RouteKey commands are parsed into engine commands and run on the shard
	// that owns their key (one engine command per key).
	RouteKey Route = iota + 1
	// RouteAll commands run on every shard, and the server merges the answers.
	RouteAll
	// RouteServer commands are answered by the server itself.
	RouteServer
)

// ID names a command so the server can switch on it without comparing
// strings.
type ID uint8

// The command IDs.
const (
	idNone ID = iota
	// decisions
	IDSliding
	IDFixed
	IDLog
	IDToken
	IDLeaky
	IDGCRA
	IDThrottle
	IDShape
	IDQuota
	IDAcquire
	IDRelease
	IDCheck
	IDAll
	IDPolicy
	// strings
	IDGet
	IDSet
	IDSetNX
	IDSetEX
	IDPSetEX
	IDGetSet
	IDIncr
	IDIncrBy
	IDDecr
	IDDecrBy
	IDExpire
	IDPExpire
	IDExpireAt
	IDPExpireAt
	IDPersist
	// keys
	IDInfoKey
	IDReset
	IDDel
	IDUnlink
	IDExists
	IDType
	IDPTTL
	IDTTL
	// every shard
	IDDBSize
	IDFlushAll
	IDFlushDB
	IDScan
	// the server
	IDPing
	IDEcho
	IDQuit
	IDResetConn
	IDHello
	IDAuth
	IDSelect
	IDClient
	IDInfo
	IDCommand
	IDConfig
	IDTime
	IDReadOnly
	IDReadWrite
	IDCluster
	IDMulti
	IDExec
	IDDiscard
	IDDebug
	IDMemory
	IDACL
	// hashes
	IDHGet
	IDHSet
	IDHMSet
	IDHMGet
	IDHIncrBy
	IDHIncrByFloat
	IDHDel
	IDHExists
	IDHGetAll
	IDHLen
	// lists
	IDLPush
	IDRPush
	IDLPop
	IDRPop
	IDLIndex
	IDLRange
	IDLTrim
	IDLLen
	// keys
	IDRename
	IDRenameNX
	// scripting
	IDEval
	IDEvalSHA
	IDEvalRO
	IDEvalSHARO
	IDScript
	// operators
	IDTop
	IDBackup
	// budget leases
	IDShare
	IDUnshare
	// charging by usage
	IDReserve
	IDSettle
	// strings over several keys, and the keyspace
	IDMGet
	IDMSet
	IDKeys
	// optimistic locking
	IDWatch
	IDUnwatch
)

// Arg documents one argument for COMMAND DOCS and the reference docs.
type Arg struct {
	Name     string
	Type     string // Redis's argument types: key, integer, string, pattern, pure-token, oneof, block
	Token    string // the keyword that introduces it, e.g. "COST"
	Optional bool
	Multiple bool
	Args     []Arg // the choices of a oneof, the parts of a block
}

// Spec describes one command or subcommand.
type Spec struct {
	ID         ID
	Name       string // lower case, "parent|sub" for subcommands
	Arity      int    // Redis's convention: -n means at least n words, name included
	Flags      []string
	FirstKey   int
	LastKey    int // -1: the last argument
	KeyStep    int
	Categories []string // ACL categories, with their "@"
	Group      string
	Since      string
	Complexity string
	Summary    string
	Args       []Arg
	Sub        []*Spec
	Route      Route
	// SameSlot: the keys must share a hash slot even on a standalone server,
	// because the command runs as one step on one shard (RL.ALL).
	SameSlot bool
	// Index is the spec's place among every command and subcommand (see
	// Specs), dense from 0, so that a user's permissions are a bitmap.
	Index int
	// parse appends the engine commands for args to dst (RouteKey only).
	parse func(args [][]byte, dst []engine.Command) ([]engine.Command, error)
}

// HasKeys reports whether the command names keys in its arguments.
func (s *Spec) HasKeys() bool { return s.FirstKey > 0 }

// Keys calls fn with each key named in args (the whole command, name first).
func (s *Spec) Keys(args [][]byte, fn func(key []byte)) {
	if s.FirstKey == 0 {
		return
	}
	switch s.ID {
	case IDAll: // keys that move with the arguments: FirstKey is the first's place
		allKeys(args, fn)
		return
	case IDEval, IDEvalSHA, IDEvalRO, IDEvalSHARO: // numkeys, then the keys
		evalKeys(args, fn)
		return
	case IDSettle: // the key its reservation's id names
		settleKeys(args, fn)
		return
	}
	last := s.LastKey
	if last < 0 {
		last = len(args) + last
	}
	for i := s.FirstKey; i <= last && i < len(args); i += s.KeyStep {
		fn(args[i])
	}
}

// KeyUse is what a command does to the keys it names.
type KeyUse uint8

// The uses, as Redis's key specifications name them (COMMAND INFO's flags).
const (
	KeysUpdated KeyUse = iota // read and written (RW, UPDATE): a decision
	KeysRead                  // read only (RO, ACCESS)
	KeysDeleted               // removed, never read (RM, DELETE)
)

// KeyUse is what s does to its keys: COMMAND INFO's key specification says
// it, and ACL key permissions check it.
func (s *Spec) KeyUse() KeyUse {
	switch {
	case s.ID == IDDel || s.ID == IDUnlink || s.ID == IDReset:
		return KeysDeleted
	case s.ID == IDWatch || len(s.Flags) > 0 && s.Flags[0] == "readonly":
		return KeysRead
	}
	return KeysUpdated
}

// CheckArity returns the arity error for args, if any.
func (s *Spec) CheckArity(args [][]byte) error {
	if (s.Arity > 0 && len(args) != s.Arity) || (s.Arity < 0 && len(args) < -s.Arity) {
		return WrongArity(s.Name)
	}
	if s.KeyStep == 2 && s.LastKey == -1 && len(args)%2 == 0 { // key value pairs (MSET)
		return WrongArity(s.Name)
	}
	return nil
}

// Parse appends to dst the engine commands that carry out args, a RouteKey
// command whose arity has been checked.
func (s *Spec) Parse(args [][]byte, dst []engine.Command) ([]engine.Command, error) {
	return s.parse(args, dst)
}

// Subcommand returns the subcommand of s named by args[1], if any.
func (s *Spec) Subcommand(args [][]byte) *Spec {
	if len(args) < 2 {
		return nil
	}
	parent := len(s.Name) + 1
	for _, sub := range s.Sub {
		if EqualFold(args[1], sub.Name[parent:]) {
			return sub
		}
	}
	return nil
}

// Lookup returns the command named name (any case), or nil.
func Lookup(name []byte) *Spec {
	var buf [24]byte
	if len(name) > len(buf) {
		return nil
	}
	for i, c := range name {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		buf[i] = c
	}
	return byName[string(buf[:len(name)])]
}

// All returns every top-level command, in the table's order.
func All() []*Spec { return table }

var byName = func() map[string]*Spec {
	m := make(map[string]*Spec, len(table))
	for _, s := range table {
		m[s.Name] = s
	}
	return m
}()
