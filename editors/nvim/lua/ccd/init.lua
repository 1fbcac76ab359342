--- ccd.nvim: Claude Code sessions run by the ccd daemon, from Neovim.
---
--- require('ccd').setup({ ... }) configures the plugin and subscribes to the
--- daemon's events; the commands (plugin/ccd.lua) work without it.

local rpc = require('ccd.rpc')

local M = {}

local defaults = {
  --- The ccd executable (terminals run `ccd attach` / `ccd observe`; it
  --- also starts the daemon when none answers).
  ccd_bin = 'ccd',
  --- The daemon's socket directory (default: $CCD_SOCKET_DIR, else
  --- $XDG_RUNTIME_DIR/ccd, else /tmp/ccd-<uid>).
  socket_dir = nil,
  --- Start the daemon when a command finds none.
  autostart = true,
  --- Subscribe to events in setup() and notify (see `notify`).
  events = true,
  --- Which events become vim.notify calls.
  notify = { attention = true, turn = true, exited = true },
  --- Called with every event's params (after subscribing).
  on_event = nil,
  --- When the event connection is down, try again every this many ms.
  reconnect_ms = 5000,
  --- The Ex command that opens an empty window for a terminal:
  --- 'tabnew', 'new', 'vnew', 'enew', 'botright 20new', ...
  open = 'tabnew',
  --- Enter terminal mode in the new terminal.
  insert = true,
  --- Close the terminal's window when `ccd attach` ends with exit code 0
  --- (a detach, or the session ended).
  close_on_exit = false,
  --- Passed as `ccd attach --detach-key`; Nvim's terminal keeps Ctrl-\
  --- (ccd's default) as the prefix of <C-\><C-n>, so e.g. 'ctrl-]'.
  detach_key = nil,
  --- The picker's sessions: at most this many, newest first.
  list_limit = 200,
  --- Only sessions a process may be running.
  live_only = false,
  --- `:CcdSearch`: at most this many hits (one per session), best first.
  search_limit = 50,
  --- Another machine: 'ssh://[user@]host[:port]' (nil: this one). The
  --- socket client runs `ssh -T host -- <remote_ccd> dial-stdio`; terminals
  --- run `ccd --host <host> attach ...`. ssh must not need to ask anything
  --- here (keys or an agent; Nvim has no terminal for ssh's prompts).
  host = nil,
  --- The ssh program and its first options (also CCD_SSH_COMMAND for the
  --- terminals' ccd).
  ssh_command = { 'ssh' },
  --- The ccd run on the remote host.
  remote_ccd = 'ccd',
}

M.config = vim.deepcopy(defaults)

function M.setup(opts)
  M.config = vim.tbl_deep_extend('force', vim.deepcopy(defaults), opts or {})
  rpc.configure({
    ccd_bin = M.config.ccd_bin,
    socket_dir = M.config.socket_dir,
    autostart = M.config.autostart,
    host = M.config.host,
    ssh_command = M.config.ssh_command,
    remote_ccd = M.config.remote_ccd,
  })
  if M.config.events then
    require('ccd.events').start()
  end
end

local function notify_err(what, err)
  local msg = type(err) == 'table' and (err.message or vim.inspect(err)) or tostring(err)
  vim.notify(('ccd: %s: %s'):format(what, msg), vim.log.levels.ERROR)
end

--- Opens an empty window (the `open` option) running `ccd <args...>` in a
--- terminal. Returns the buffer and the job id.
function M.terminal(args, session)
  local cfg = M.config
  local cmd = { cfg.ccd_bin }
  local remote = cfg.host and cfg.host ~= '' and cfg.host ~= 'local'
  if remote then
    vim.list_extend(cmd, { '--host', cfg.host, '--remote-ccd', cfg.remote_ccd or 'ccd' })
  end
  vim.list_extend(cmd, args)
  vim.cmd(cfg.open)
  local buf = vim.api.nvim_get_current_buf()
  local empty = vim.api.nvim_buf_line_count(buf) == 1
    and vim.api.nvim_buf_get_lines(buf, 0, 1, false)[1] == ''
    and not vim.bo[buf].modified
  if not empty then
    buf = vim.api.nvim_create_buf(true, false)
    vim.api.nvim_win_set_buf(0, buf)
  end
  local win = vim.api.nvim_get_current_win()
  local job_opts = {
    on_exit = function(_, code)
      if vim.api.nvim_buf_is_valid(buf) then
        vim.b[buf].ccd_exit_code = code
      end
      if cfg.close_on_exit and code == 0 then
        vim.schedule(function()
          if vim.api.nvim_buf_is_valid(buf) then
            vim.api.nvim_buf_delete(buf, { force = true })
          end
        end)
      end
    end,
  }
  local dir = rpc.config().socket_dir
  if dir then
    job_opts.env = { CCD_SOCKET_DIR = dir }
  end
  if remote and cfg.ssh_command then
    job_opts.env = job_opts.env or {}
    job_opts.env.CCD_SSH_COMMAND = table.concat(cfg.ssh_command, ' ')
  end
  local job
  if vim.fn.has('nvim-0.11') == 1 then
    job_opts.term = true
    job = vim.fn.jobstart(cmd, job_opts)
  else
    job = vim.fn.termopen(cmd, job_opts)
  end
  if job <= 0 then
    notify_err('cannot run ' .. table.concat(cmd, ' '), job == -1 and 'not executable' or 'invalid arguments')
    return buf, nil
  end
  vim.b[buf].ccd_session = session
  vim.b[buf].ccd_job = job
  -- "ccd://attach/9cc17429" rather than the term:// name of the binary.
  local name = ('ccd://%s/%s'):format(args[1], (session or ''):sub(1, 8))
  if not pcall(vim.api.nvim_buf_set_name, buf, name) then
    pcall(vim.api.nvim_buf_set_name, buf, name .. '/' .. job)
  end
  if cfg.insert and vim.api.nvim_get_current_win() == win then
    vim.cmd('startinsert')
  end
  return buf, job
end

local function key_args()
  if M.config.detach_key then
    return { '--detach-key', M.config.detach_key }
  end
  return {}
end

--- Attaches to a session in a terminal (`ccd attach`): whatever its state,
--- resumed if dead, refused (with the reason) if it runs outside ccd.
function M.attach(id)
  local args = { 'attach' }
  vim.list_extend(args, key_args())
  table.insert(args, id)
  return M.terminal(args, id)
end

--- Watches a session read-only in a terminal (`ccd observe`).
function M.observe(id)
  local args = { 'observe' }
  vim.list_extend(args, key_args())
  table.insert(args, id)
  return M.terminal(args, id)
end

--- Forks a session through the daemon, then attaches to the fork.
--- `cb(err, new_id)` when given (then nothing is opened).
function M.fork(id, cb)
  vim.notify(('ccd: forking %s…'):format(id:sub(1, 8)), vim.log.levels.INFO)
  rpc.shared():request('session.fork', { session = id }, function(err, res)
    if cb then
      return cb(err, res and res.session)
    end
    if err then
      return notify_err('fork ' .. id:sub(1, 8), err)
    end
    vim.notify(('ccd: forked %s into %s'):format(id:sub(1, 8), res.session:sub(1, 8)), vim.log.levels.INFO)
    M.attach(res.session)
  end)
end

--- Ends a session ccd holds (SIGTERM, then SIGKILL after a grace period).
--- opts: `confirm` (default true), `signal`; `cb(err, result)`.
function M.kill(id, opts, cb)
  opts = opts or {}
  if opts.confirm ~= false then
    if vim.fn.confirm(('Kill ccd session %s?'):format(id:sub(1, 8)), '&Yes\n&No', 2) ~= 1 then
      return
    end
  end
  rpc.shared():request('session.kill', { session = id, signal = opts.signal }, function(err, res)
    if cb then
      return cb(err, res)
    end
    if err then
      return notify_err('kill ' .. id:sub(1, 8), err)
    end
    local how = res.exit_signal and ('signal ' .. res.exit_signal) or ('exit code ' .. tostring(res.exit_code))
    vim.notify(('ccd: %s ended (%s)'):format(id:sub(1, 8), res.signalled and how or 'had already exited'))
  end)
end

--- Answers the tool permission prompt session `id` shows
--- (`session.respond`). `choice`: 'yes', 'always' or 'no'. opts:
--- `prompt` (the prompt id; default: the one its attention event named,
--- so only a prompt the user was told about is answered), `message`
--- (with 'no': what Claude should do instead); `cb(err, result)`.
function M.respond(id, choice, opts, cb)
  opts = opts or {}
  local pending = require('ccd.events').pending
  local prompt = opts.prompt
  if prompt == nil then
    for sid, p in pairs(pending) do
      if sid == id or sid:sub(1, #id) == id then
        prompt = p.prompt
      end
    end
  end
  local params = { session = id, choice = choice, prompt = prompt, message = opts.message }
  rpc.shared():request('session.respond', params, function(err, res)
    if cb then
      return cb(err, res)
    end
    local verb = choice == 'no' and 'deny' or 'approve'
    if err then
      return notify_err(verb .. ' ' .. id:sub(1, 8), err)
    end
    vim.notify(
      ('ccd: %s %s: %s'):format(choice == 'no' and 'denied' or 'approved', res.session:sub(1, 8), res.option),
      vim.log.levels.INFO
    )
  end)
end

--- Allows what the permission prompt of session `id` asks (opts.always:
--- and do not ask again). See `respond`.
function M.approve(id, opts, cb)
  opts = opts or {}
  return M.respond(id, opts.always and 'always' or 'yes', opts, cb)
end

--- Refuses what the permission prompt of session `id` asks (opts.message:
--- what to do instead). See `respond`.
function M.deny(id, opts, cb)
  return M.respond(id, 'no', opts, cb)
end

--- The sessions with a permission prompt the events told of.
local function pending_sessions()
  local out = {}
  for sid, p in pairs(require('ccd.events').pending) do
    table.insert(out, { session_id = sid, prompt = p })
  end
  table.sort(out, function(a, b)
    return a.session_id < b.session_id
  end)
  return out
end

--- `:CcdApprove` / `:CcdDeny` without an id: the one session waiting on a
--- prompt, or a choice among them.
local function on_pending(action)
  local waiting = pending_sessions()
  if #waiting == 0 then
    return vim.notify('ccd: no session waits on a permission prompt', vim.log.levels.INFO)
  end
  if #waiting == 1 then
    return M[action](waiting[1].session_id)
  end
  vim.ui.select(waiting, {
    prompt = 'ccd ' .. action,
    kind = 'ccd.permission',
    format_item = function(w)
      local p = w.prompt
      return ('%s  %s %s'):format(w.session_id:sub(1, 8), p.tool or '', p.detail or '')
    end,
  }, function(choice)
    if choice then
      M[action](choice.session_id)
    end
  end)
end

M.actions = { attach = true, observe = true, fork = true, kill = true, menu = true, approve = true, deny = true }

--- Runs `action` on session `id`, or on one chosen in the picker.
--- `action` = 'menu' asks what to do after choosing.
function M.run(action, id)
  if id and id ~= '' then
    if action == 'menu' then
      return rpc.shared():request('sessions.get', { session = id }, function(err, s)
        if err then
          return notify_err(id, err)
        end
        require('ccd.picker').actions_menu(s)
      end)
    end
    return M[action](id)
  end
  if action == 'approve' or action == 'deny' then
    return on_pending(action)
  end
  local picker = require('ccd.picker')
  picker.pick({ prompt = action == 'menu' and 'ccd session' or ('ccd ' .. action) }, function(s)
    if action == 'menu' then
      picker.actions_menu(s)
    else
      M[action](s.session_id)
    end
  end)
end

--- Searches what was said in the sessions (`sessions.search`: prompts,
--- replies, commands, paths, titles) and lets the user choose a hit; the
--- chosen session is opened as one chosen in the `:Ccd` picker is:
--- `action` (default 'attach', ccd's one rule: attach if ccd holds it,
--- resume it in its own folder if dead, say what to do if it runs
--- elsewhere; 'menu' asks, e.g. observe or fork). opts: see
--- `picker.search`.
function M.search(query, action, opts)
  query = vim.trim(query or '')
  if query == '' then
    return vim.notify('ccd: search for what? :CcdSearch {words}', vim.log.levels.WARN)
  end
  action = action or 'attach'
  require('ccd.picker').pick_hit(query, opts, function(hit)
    M.run(action, hit.session_id)
  end)
end

--- Completion of session ids (short ids of the listed sessions).
function M.complete(arglead)
  local res = rpc.shared():request_sync('sessions.list', { limit = M.config.list_limit }, 1000)
  local out = {}
  for _, s in ipairs((res and res.sessions) or {}) do
    local sid = s.session_id or ''
    if sid:sub(1, #arglead) == arglead then
      table.insert(out, #arglead > 8 and sid or sid:sub(1, 8))
    end
  end
  return out
end

return M
