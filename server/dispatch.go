package server

import (
	"strings"

	"github.com/rlserver/rlserver/commands"
)

// serverCommand answers a command the server handles itself (RouteServer) or
// that spans every shard (RouteAll). Its arity has been checked.
func (c *client) serverCommand(spec *commands.Spec, args [][]byte, out []byte) []byte {
	switch spec.ID {
	case commands.IDPing:
		if len(args) > 2 {
			return appendError(out, commands.WrongArity("ping"))
		}
		if len(args) == 2 {
			return appendBulk(out, args[1])
		}
		return appendSimple(out, "PONG")
	case commands.IDEcho:
		return appendBulk(out, args[1])
	case commands.IDQuit:
		c.quit = true
		return appendOK(out)
	case commands.IDResetConn:
		c.resetState()
		return appendSimple(out, "RESET")
	case commands.IDHello:
		return c.hello(args, out)
	case commands.IDAuth:
		return c.auth(args, out)
	case commands.IDSelect:
		return c.selectDB(args, out)
	case commands.IDClient:
		return c.clientCommand(spec, args, out)
	case commands.IDInfo:
		return c.info(args, out)
	case commands.IDCommand:
		return c.commandCommand(spec, args, out)
	case commands.IDConfig:
		return c.config(spec, args, out)
	case commands.IDTime:
		return c.time(out)
	case commands.IDReadOnly, commands.IDReadWrite:
		// Only cluster clients send these: they follow MOVED.
		c.clusterAware = c.srv.cfg.Cluster != nil
		return appendOK(out)
	case commands.IDCluster:
		return c.clusterCommand(spec, args, out)
	case commands.IDMulti:
		return c.multi(out)
	case commands.IDExec:
		return c.execTransaction(out)
	case commands.IDDiscard:
		return c.discard(out)
	case commands.IDDebug:
		return c.debugCommand(spec, args, out)
	case commands.IDMemory:
		return c.memoryCommand(spec, args, out)
	case commands.IDDBSize:
		return c.dbsize(out)
	case commands.IDFlushAll, commands.IDFlushDB:
		return c.flushAll(args, out)
	case commands.IDScan:
		return c.scan(args, out)
	case commands.IDPolicy:
		return c.policyCommand(spec, args, out)
	case commands.IDACL:
		return c.aclCommand(spec, args, out)
	}
	return appendError(out, commands.UnknownCommand(args))
}

// subcommand finds the subcommand args[1] of spec and checks its arity; on
// failure it returns the error to answer. CLIENT LIST then names it (cmd=).
func (c *client) subcommand(spec *commands.Spec, args [][]byte) (*commands.Spec, error) {
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

// appendHelp answers a HELP subcommand with its lines, as Redis does: the
// command and its subcommands in upper case, each followed by its summary.
func appendHelp(out []byte, spec *commands.Spec) []byte {
	lines := []string{strings.ToUpper(spec.Name) + " <subcommand> [<arg> [value] [opt] ...]. Subcommands are:"}
	for _, sub := range spec.Sub {
		lines = append(lines, strings.ToUpper(sub.Name[len(spec.Name)+1:]), "    "+sub.Summary)
	}
	out = appendArray(out, len(lines))
	for _, l := range lines {
		out = appendSimple(out, l)
	}
	return out
}
