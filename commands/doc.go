// Package commands is rlserver's command table: every command's name, arity,
// flags, key positions and documentation, the parsing of a decision or key
// command's arguments into engine commands, and the error texts clients see.
// It has no network code; the server looks commands up here, and COMMAND,
// COMMAND DOCS and docs/commands.md all describe this one table.
package commands
