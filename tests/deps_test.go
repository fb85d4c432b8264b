package tests

// go-redis is the client the end-to-end tests drive rlserver with.
import _ "github.com/redis/go-redis/v9"
