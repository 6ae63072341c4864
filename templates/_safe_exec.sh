# slurmkit's exec rule, shell side (slurmkit/safeexec.py reads this file; templates
# include it). POSIX sh: pyspy's node command runs it under sh, the templates and the
# undrain gate under bash. Root (or a train's owner) runs what it names, so:
#   1. resolve the program ONCE (links and all),
#   2. check the resolved file and every folder above it: owned by root or the caller,
#      writable by nobody else (a root-owned sticky folder such as /tmp is allowed
#      higher up; never as the file's folder or the one above it, where Python looks
#      for pyvenv.cfg),
#   3. run exactly that file: sk_exec (bash) keeps the name it was called by as argv[0],
#      in its resolved folder, so a venv is still that venv.
# Python then starts with -I (or -P where it has it): no import from the current folder
# or the script's folder. A refusal sets sk_why to one "slurmkit-refused: ..." line.
# Nothing here may look like Jinja: no brace-hash, brace-brace or brace-percent.

sk_check_path() {  # sk_check_path PATH STRICT: PATH (no links in it) and every folder above
  # STRICT: how many components, from PATH up, get no sticky-folder exception.
  sk_dir=$1 sk_strict=$2 sk_uid=$(id -u)
  while :; do
    set -f; set -- $(ls -ldn -- "$sk_dir" 2>/dev/null); set +f
    if [ $# -lt 3 ]; then sk_why="cannot inspect $sk_dir"; return 1; fi
    if [ "$3" != 0 ] && [ "$3" != "$sk_uid" ]; then
      sk_why="$sk_dir is owned by uid $3, not by you (uid $sk_uid) or root"; return 1
    fi
    case $1 in
      ?????w*|????????w*)
        case $sk_strict$3$1 in
          00d????????[tT]*) ;;
          *) sk_why="$sk_dir is writable by group or others ($1)"; return 1 ;;
        esac ;;
    esac
    [ "$sk_dir" = / ] && return 0
    sk_dir=$(dirname -- "$sk_dir")
    [ "$sk_strict" -gt 0 ] && sk_strict=$((sk_strict - 1))
  done
}

sk_resolve() {  # sk_resolve WHAT PROGRAM: sets sk_exe (the file to run) and sk_arg0
  sk_what=$1 sk_found=$2
  case $sk_found in
    */*) ;;
    *) if ! sk_found=$(command -v "$2"); then
         sk_why="slurmkit-refused: $sk_what $2: not found on PATH"; return 1
       fi ;;
  esac
  # The folder the name is in, then the file: each resolved once, before any check.
  sk_home=$(CDPATH='' cd -P -- "$(dirname -- "$sk_found")" 2>/dev/null && pwd -P) || sk_home=
  sk_exe=$(readlink -f -- "$sk_found" 2>/dev/null) || sk_exe=
  if [ -z "$sk_exe" ] || [ -z "$sk_home" ] || [ ! -f "$sk_exe" ] || [ ! -x "$sk_exe" ]; then
    sk_why="slurmkit-refused: $sk_what $sk_found: not an executable file"; return 1
  fi
  if ! sk_check_path "$sk_exe" 3 || ! sk_check_path "$sk_home" 2; then
    sk_why="slurmkit-refused: $sk_what $sk_found: $sk_why"; return 1
  fi
  sk_arg0=$sk_home/${sk_found##*/}
}

sk_python_flag() {  # sk_python_flag MODE: sets sk_flag for sk_exe (after sk_resolve)
  # isolated: -I (no current or script folder, no PYTHONPATH, no user site).
  # safe-path: -P where the interpreter has it (3.11+: PYTHONPATH from a module system
  # still counts), else -I.
  sk_flag=-I
  if [ "$1" = safe-path ] && "$sk_exe" -P -c '' </dev/null >/dev/null 2>&1; then
    sk_flag=-P
  fi
}

sk_exec() {  # sk_exec ARG...: bash only; exactly the resolved file, named as it was called
  exec -a "$sk_arg0" "$sk_exe" "$@"
}
