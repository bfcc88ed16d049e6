#compdef monad

_monad_completion() {
  eval $(env _TYPER_COMPLETE_ARGS="${words[1,$CURRENT]}" _MONAD_COMPLETE=complete_zsh monad)
}

compdef _monad_completion monad
