"""What every route episode shares, static or dynamic: the guarded episode, config, history."""
