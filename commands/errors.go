package commands

import (
	"errors"
	"fmt"
	"strings"
)

// Errors whose text is Redis's own, so clients and users recognise them. The
// text of every error in this package is what goes on the wire after "-".
var (
	ErrSyntax     = errors.New("ERR syntax error")
	ErrNotInteger = errors.New("ERR value is not an integer or out of range")
	ErrCrossSlot  = errors.New("CROSSSLOT Keys in request don't hash to the same slot")
)

// WrongArity is Redis's error for a command given the wrong number of
// arguments; name is the command, or "parent|sub" for a subcommand.
func WrongArity(name string) error {
	return fmt.Errorf("ERR wrong number of arguments for '%s' command", name)
}

// UnknownCommand is Redis's error for a command name it does not know,
// quoting the first arguments as Redis does.
func UnknownCommand(args [][]byte) error {
	var b strings.Builder
	for _, a := range args[1:] {
		if b.Len() >= 128 {
			break
		}
		fmt.Fprintf(&b, "'%.*s' ", 128-b.Len(), a)
	}
	return fmt.Errorf("ERR unknown command '%.128s', with args beginning with: %s", args[0], b.String())
}

// UnknownSubcommand is Redis's error for a subcommand a container command
// does not have.
func UnknownSubcommand(parent string, sub []byte) error {
	return fmt.Errorf("ERR unknown subcommand '%.128s'. Try %s HELP.", sub, strings.ToUpper(parent))
}

// SubcommandSyntax is Redis's error for a subcommand of variable arity
// given arguments it does not take (addReplySubcommandSyntaxError): sub
// quoted as the client wrote it.
func SubcommandSyntax(parent string, sub []byte) error {
	return fmt.Errorf("ERR unknown subcommand or wrong number of arguments for '%.128s'. Try %s HELP.", sub, strings.ToUpper(parent))
}
