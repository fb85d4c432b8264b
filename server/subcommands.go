package server

import (
	"strings"

	"github.com/rlserver/rlserver/commands"
	"github.com/rlserver/rlserver/internal/resp"
)

// The commands with subcommands (ACL, CLIENT, CLUSTER, COMMAND, CONFIG,
// DEBUG, MEMORY, SCRIPT, RL.POLICY) are answered through one table:
// every subcommand the command table lists (package commands, "client|list")
// has its entry here, which names the method that answers it and says
// whether an event loop answers it itself. The methods are in the files of
// their commands. The entries are found by the spec's Index, so answering
// a subcommand compares no names; TestEverySubcommandHasAnEntry checks that
// the two tables agree.

// subcommand is how the server answers one subcommand.
type subcommand struct {
	// answer answers sub; args is the whole command, its arity checked.
	answer func(c *conn, sub *commands.Spec, args [][]byte, out []byte) []byte
	// onLoop: it reads or sets only the connection's own state, or reads
	// this node's figures or its view of the cluster, so an event loop
	// answers it itself; otherwise it may wait (for every shard, the
	// cluster's catalogue, a collection) and a goroutine answers it aside
	// (loopwait.go).
	onLoop bool
}

// subcommandTable is every subcommand's entry, by its name in the command
// table.
var subcommandTable = map[string]subcommand{
	"acl|whoami":  {answer: (*conn).aclWhoami},
	"acl|users":   {answer: (*conn).aclUsers},
	"acl|list":    {answer: (*conn).aclList},
	"acl|getuser": {answer: (*conn).aclGetUser},
	"acl|cat":     {answer: (*conn).aclCat},
	"acl|genpass": {answer: (*conn).aclGenpass},
	"acl|setuser": {answer: (*conn).aclReadOnly},
	"acl|deluser": {answer: (*conn).aclReadOnly},
	"acl|load":    {answer: (*conn).aclReadOnly},
	"acl|save":    {answer: (*conn).aclReadOnly},
	"acl|help":    {answer: (*conn).help},

	"client|setname":      {answer: (*conn).clientSetName, onLoop: true},
	"client|getname":      {answer: (*conn).clientGetName, onLoop: true},
	"client|setinfo":      {answer: (*conn).clientSetInfo, onLoop: true},
	"client|id":           {answer: (*conn).clientID, onLoop: true},
	"client|info":         {answer: (*conn).clientInfo, onLoop: true},
	"client|list":         {answer: (*conn).clientList, onLoop: true},
	"client|tracking":     {answer: (*conn).clientTracking, onLoop: true},
	"client|caching":      {answer: (*conn).clientCaching, onLoop: true},
	"client|getredir":     {answer: (*conn).clientGetRedir, onLoop: true},
	"client|trackinginfo": {answer: (*conn).clientTrackingInfo, onLoop: true},
	"client|no-evict":     {answer: (*conn).clientAccepted, onLoop: true},
	"client|no-touch":     {answer: (*conn).clientAccepted, onLoop: true},
	"client|help":         {answer: (*conn).help, onLoop: true},

	"cluster|keyslot": {answer: (*conn).clusterKeySlot, onLoop: true},
	"cluster|slots":   {answer: (*conn).clusterSlots, onLoop: true},
	"cluster|shards":  {answer: (*conn).clusterShards, onLoop: true},
	"cluster|nodes":   {answer: (*conn).clusterNodes, onLoop: true},
	"cluster|info":    {answer: (*conn).clusterInfo, onLoop: true},
	"cluster|myid":    {answer: (*conn).clusterMyID, onLoop: true},
	// The changes wait for the cluster's catalogue.
	"cluster|moveshard": {answer: (*conn).clusterMoveShard},
	"cluster|rebalance": {answer: (*conn).clusterRebalance},
	"cluster|forget":    {answer: (*conn).clusterForget},
	"cluster|help":      {answer: (*conn).help, onLoop: true},

	"command|count":   {answer: (*conn).commandCount, onLoop: true},
	"command|list":    {answer: (*conn).commandList, onLoop: true},
	"command|info":    {answer: (*conn).commandInfo, onLoop: true},
	"command|docs":    {answer: (*conn).commandDocs, onLoop: true},
	"command|getkeys": {answer: (*conn).commandGetKeys, onLoop: true},
	"command|help":    {answer: (*conn).help, onLoop: true},

	"config|get":       {answer: (*conn).configGet},
	"config|set":       {answer: (*conn).configSet},
	"config|resetstat": {answer: (*conn).configResetStat},
	"config|help":      {answer: (*conn).help},

	"debug|clock":         {answer: (*conn).debugClock},
	"debug|disk":          {answer: (*conn).debugDisk},
	"debug|digest":        {answer: (*conn).debugDigest},
	"debug|digest-shards": {answer: (*conn).debugDigestShards},
	"debug|help":          {answer: (*conn).help},

	"memory|usage": {answer: (*conn).memoryUsage},
	"memory|stats": {answer: (*conn).memoryStats},
	"memory|purge": {answer: (*conn).memoryPurge},
	"memory|help":  {answer: (*conn).help},

	"script|load":   {answer: (*conn).scriptLoad},
	"script|exists": {answer: (*conn).scriptExists},
	"script|flush":  {answer: (*conn).scriptFlush},
	"script|kill":   {answer: (*conn).scriptKill},
	"script|help":   {answer: (*conn).help},

	"rl.policy|set":  {answer: (*conn).policySet},
	"rl.policy|get":  {answer: (*conn).policyGet},
	"rl.policy|list": {answer: (*conn).policyList},
	"rl.policy|del":  {answer: (*conn).policyDel},
	"rl.policy|help": {answer: (*conn).help},
}

// subcommands are subcommandTable's entries by their spec's Index; a
// subcommand without an entry has none (answer nil).
var subcommands = func() []subcommand {
	specs := commands.Specs()
	byIndex := make([]subcommand, len(specs))
	for _, s := range specs {
		byIndex[s.Index] = subcommandTable[s.Name]
	}
	return byIndex
}()

// subcommandOf is sub's entry.
func subcommandOf(sub *commands.Spec) subcommand { return subcommands[sub.Index] }

// answerSubcommand answers a command with subcommands: the one args[1]
// names, its arity checked.
func (c *conn) answerSubcommand(spec *commands.Spec, args [][]byte, out []byte) []byte {
	sub, err := c.subcommand(spec, args)
	if err != nil {
		return appendError(out, err)
	}
	answer := subcommandOf(sub).answer
	if answer == nil {
		return appendError(out, commands.UnknownSubcommand(spec.Name, args[1]))
	}
	return answer(c, sub, args, out)
}

// subcommand finds the subcommand args[1] of spec and checks its arity; on
// failure it returns the error to answer. CLIENT LIST then names it (cmd=).
func (c *conn) subcommand(spec *commands.Spec, args [][]byte) (*commands.Spec, error) {
	sub := spec.Subcommand(args)
	if sub == nil {
		return nil, commands.UnknownSubcommand(spec.Name, args[1])
	}
	if err := sub.CheckArity(args); err != nil {
		return nil, err
	}
	c.lastSpec.Store(sub)
	return sub, nil
}

// help answers a HELP subcommand with its command's lines, as Redis does:
// the command and its subcommands in upper case, each followed by its
// summary.
func (c *conn) help(sub *commands.Spec, _ [][]byte, out []byte) []byte {
	parentName, _, _ := strings.Cut(sub.Name, "|")
	parent := commands.Lookup([]byte(parentName))
	lines := []string{strings.ToUpper(parent.Name) + " <subcommand> [<arg> [value] [opt] ...]. Subcommands are:"}
	for _, s := range parent.Sub {
		lines = append(lines, strings.ToUpper(s.Name[len(parent.Name)+1:]), "    "+s.Summary)
	}
	out = resp.AppendArray(out, len(lines))
	for _, l := range lines {
		out = resp.AppendSimple(out, l)
	}
	return out
}
