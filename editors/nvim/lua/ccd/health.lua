--- :checkhealth ccd

local rpc = require('ccd.rpc')
local uv = vim.uv or vim.loop

local M = {}

local h = vim.health
-- Nvim 0.9 has both names; 0.10 deprecates report_*.
local start = h.start or h.report_start
local ok = h.ok or h.report_ok
local warn = h.warn or h.report_warn
local fail = h.error or h.report_error
local info = h.info or h.report_info

--- "ccd 0.1.0" -> "0.1.0"
local function version_of(out)
  return out and out:match('(%d+%.%d+%.%d+[%w%.%-+]*)')
end

function M.check()
  start('ccd')

  if vim.fn.has('nvim-0.9') == 1 then
    local v = vim.version()
    ok(('Neovim %d.%d.%d'):format(v.major, v.minor, v.patch))
  else
    fail('Neovim 0.9 or later is required')
  end

  -- The binary (terminals run it; it also starts the daemon).
  local cfg = require('ccd').config
  local bin = cfg.ccd_bin
  local bin_version
  if vim.fn.executable(bin) == 1 then
    local out = vim.fn.system({ bin, '--version' })
    bin_version = vim.v.shell_error == 0 and version_of(out) or nil
    if bin_version then
      ok(('`%s` %s (%s)'):format(bin, bin_version, vim.fn.exepath(bin)))
    else
      warn(('`%s --version` failed: %s'):format(bin, vim.trim(out)))
    end
  else
    fail(('`%s` not found'):format(bin), {
      'cargo install --locked --path crates/ccd (in the ccd repository)',
      "or set require('ccd').setup({ ccd_bin = '/path/to/ccd' })",
    })
  end

  -- The socket directory: private to this user.
  local dir = rpc.socket_dir()
  local st = uv.fs_lstat(dir)
  if not st then
    warn(('socket directory %s does not exist (no daemon has run yet)'):format(dir), {
      'it is created when the daemon starts: any :Ccd command starts it',
    })
  elseif st.type ~= 'directory' then
    fail(('%s is not a directory (%s)'):format(dir, st.type))
  else
    local mode = st.mode % 512 -- permission bits
    if st.uid ~= uv.getuid() then
      fail(('socket directory %s belongs to uid %d, not to you (%d)'):format(dir, st.uid, uv.getuid()))
    elseif mode ~= 448 then -- 0700
      fail(('socket directory %s has mode %o; it must be 0700'):format(dir, mode))
    else
      ok(('socket directory %s (private, 0700)'):format(dir))
    end
  end

  -- The daemon: hello, versions, protocol.
  local client = rpc.new({ autostart = false })
  local hello, err = client:connect_sync({ autostart = false }, 3000)
  if not hello then
    local msg = err and err.message or 'no answer'
    if msg:match('hello failed') then
      fail('the daemon refused hello: ' .. msg, { 'upgrade the plugin or ccd so that their protocol versions overlap' })
    else
      warn('no daemon answers at ' .. rpc.socket_path(), {
        'it starts on demand: run :Ccd, or `ccd ls` in a shell',
        msg,
      })
    end
    client:close()
    return
  end
  ok(('daemon %s answers at %s'):format(hello.daemon_version or '?', client:socket_path()))
  if hello.protocol and hello.protocol >= rpc.PROTOCOL.min and hello.protocol <= rpc.PROTOCOL.max then
    ok(('protocol version %d (plugin speaks %d..%d)'):format(hello.protocol, rpc.PROTOCOL.min, rpc.PROTOCOL.max))
  else
    fail(('protocol version %s is outside what the plugin speaks (%d..%d)'):format(
      tostring(hello.protocol), rpc.PROTOCOL.min, rpc.PROTOCOL.max))
  end
  if bin_version and hello.daemon_version and bin_version ~= hello.daemon_version then
    warn(('the daemon runs %s but `%s` is %s'):format(hello.daemon_version, bin, bin_version), {
      '`ccd daemon stop` (sessions keep running), then any :Ccd command starts the new one',
    })
  end
  local status = client:request_sync('daemon.status', nil, 3000)
  if status then
    info(('daemon pid %s; %s session(s) held; %s client(s)'):format(
      tostring(status.pid), tostring(status.sessions), tostring(status.clients)))
  end
  local events = require('ccd.events')
  if events.is_started() then
    ok('event notifications on (setup() was called)')
  else
    info("event notifications off: call require('ccd').setup() to get them")
  end
  client:close()
end

return M
