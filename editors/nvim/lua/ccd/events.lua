--- `event` notifications from the daemon, turned into `vim.notify` calls:
--- a session needs attention, a session finished a turn, a session exited.

local rpc = require('ccd.rpc')

local M = {}

--- True while the daemon sends this Nvim its events.
M.subscribed = false

local started = false
local retry_timer = nil
--- Session id -> its last known label, e.g. "9cc17429 (fix the flaky test)".
local labels = {}

--- Session id -> the permission prompt it shows, as its attention event
--- told it: { prompt = <id>, tool = 'Bash command', detail = 'echo hi' }.
--- Cleared by `session.attention_cleared`. `:CcdApprove` / `:CcdDeny`
--- answer these, naming the prompt, so a prompt the user was not told
--- about is never answered.
M.pending = {}

local function short(id)
  return (id or ''):sub(1, 8)
end

local function cfg()
  return require('ccd').config
end

local function label_of(s)
  local l = short(s.session_id)
  local what = s.title or s.name or (s.cwd and vim.fn.fnamemodify(s.cwd, ':t'))
  if what and what ~= '' then
    l = ('%s (%s)'):format(l, what)
  end
  return l
end

--- Calls `cb(label)` with a readable name for session `id`, asked of the
--- daemon each time (titles change; notifications are rare); the last
--- known label, else the short id, when it cannot say.
local function with_label(id, cb)
  rpc.shared():request('sessions.get', { session = id }, function(err, s)
    if not err and type(s) == 'table' and s.session_id then
      labels[id] = label_of(s)
    end
    cb(labels[id] or short(id))
  end)
end

local function notify(msg, level)
  -- vim.notify is looked up at call time so that a UI plugin (or a test)
  -- replacing it later still gets the message.
  vim.notify(msg, level, { title = 'ccd' })
end

--- What to say about an event, if anything: `message, level`, or nil.
--- `label` is the session's readable name.
function M.message(ev, label)
  local n = cfg().notify
  local t = ev.type
  if t == 'session.attention' and n.attention and ev.reason == 'second_writer' then
    local pids = type(ev.pids) == 'table' and table.concat(ev.pids, ', ') or '?'
    return ('ccd: %s is written by several processes (pids %s): someone resumed it outside ccd; the conversation splits'):format(label, pids),
      vim.log.levels.WARN
  elseif t == 'session.attention' and n.attention and ev.reason == 'permission' then
    local what = ev.tool or 'a tool'
    if ev.detail and ev.detail ~= '' then
      what = ('%s: %s'):format(what, ev.detail)
    end
    return ('ccd: %s asks permission (%s) — :CcdApprove or :CcdDeny'):format(label, what), vim.log.levels.WARN
  elseif t == 'session.attention' and n.attention then
    return ('ccd: %s needs attention: %s'):format(label, ev.reason or ev.waiting_for or 'unknown reason'), vim.log.levels.WARN
  elseif t == 'session.status' and n.turn and ev.status == 'idle' and ev.previous == 'busy' then
    return ('ccd: %s: turn finished'):format(label), vim.log.levels.INFO
  elseif t == 'session.exited' and n.exited then
    local how = ev.exit_signal and ('signal ' .. ev.exit_signal) or ('exit code ' .. tostring(ev.exit_code or '?'))
    return ('ccd: %s exited (%s)'):format(label, how), vim.log.levels.INFO
  end
  return nil
end

--- Handles one `event` notification's params.
function M.handle(ev)
  if type(ev) ~= 'table' or not ev.session then
    return
  end
  local hook = cfg().on_event
  if hook then
    local ok, e = pcall(hook, ev)
    if not ok then
      notify('ccd: on_event: ' .. tostring(e), vim.log.levels.ERROR)
    end
  end
  -- A process is not a conversation: after `/clear` (or `/resume` inside
  -- claude) the same process writes `to`; its label follows it.
  if ev.type == 'session.id_changed' and ev.from and ev.to and labels[ev.from] and not labels[ev.to] then
    labels[ev.to] = labels[ev.from]
  end
  if ev.type == 'session.attention' and ev.reason == 'permission' and ev.prompt then
    M.pending[ev.session] = { prompt = ev.prompt, tool = ev.tool, detail = ev.detail }
  elseif ev.type == 'session.attention_cleared' or ev.type == 'session.exited' then
    M.pending[ev.session] = nil
  end
  if ev.type == 'session.appeared' and ev.cwd and not labels[ev.session] then
    labels[ev.session] = ('%s (%s)'):format(short(ev.session), vim.fn.fnamemodify(ev.cwd, ':t'))
  end
  if not M.message(ev, '') then
    return
  end
  with_label(ev.session, function(label)
    local msg, level = M.message(ev, label)
    if msg then
      notify(msg, level)
    end
  end)
end

local function subscribe(client)
  client:request('events.subscribe', {}, function(err)
    if err then
      notify('ccd: events.subscribe failed: ' .. (err.message or vim.inspect(err)), vim.log.levels.WARN)
    else
      M.subscribed = true
    end
  end)
end

--- Tries to connect every `reconnect_ms` until a daemon answers. Events do
--- not start the daemon: the first command that needs it does.
local function schedule_retry()
  local ms = cfg().reconnect_ms
  if not started or retry_timer or not ms or ms <= 0 then
    return
  end
  retry_timer = vim.defer_fn(function()
    retry_timer = nil
    M.connect()
  end, ms)
end

function M.connect()
  if not started then
    return
  end
  rpc.shared():connect({ autostart = false }, function(err)
    if err then
      schedule_retry()
    end
  end)
end

--- Subscribes to events on the shared connection, now and after every
--- reconnection. Idempotent.
function M.start()
  if started then
    return
  end
  started = true
  local client = rpc.shared()
  client:on('event', M.handle)
  client:on_connect(function()
    subscribe(client)
  end)
  client:on_close(function()
    M.subscribed = false
    schedule_retry()
  end)
  if client:is_connected() then
    subscribe(client)
  else
    M.connect()
  end
end

function M.is_started()
  return started
end

return M
