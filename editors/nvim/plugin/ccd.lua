-- ccd.nvim commands. The modules load on first use; nothing connects to the
-- daemon until a command runs or require('ccd').setup() is called.
if vim.g.loaded_ccd then
  return
end
vim.g.loaded_ccd = true

if vim.fn.has('nvim-0.9') ~= 1 then
  vim.notify('ccd.nvim needs Neovim 0.9 or later', vim.log.levels.WARN)
  return
end

local function complete(arglead)
  return require('ccd').complete(arglead)
end

local commands = {
  Ccd = { 'attach', 'Attach to a ccd session in a terminal (picker without an id)' },
  CcdObserve = { 'observe', 'Watch a ccd session read-only in a terminal' },
  CcdFork = { 'fork', 'Fork a ccd session and attach to the fork' },
  CcdKill = { 'kill', 'End a session ccd holds' },
  CcdActions = { 'menu', 'Pick a ccd session, then attach / observe / fork / kill / approve / deny' },
  CcdApprove = { 'approve', 'Allow what the permission prompt of a ccd session asks' },
  CcdDeny = { 'deny', 'Refuse what the permission prompt of a ccd session asks' },
}

-- :CcdSearch {words}: what was said in the sessions; the hit chosen is
-- attached to (resumed if dead). :CcdSearch! asks what to do with it.
vim.api.nvim_create_user_command('CcdSearch', function(o)
  require('ccd').search(o.args, o.bang and 'menu' or 'attach')
end, { nargs = '+', bang = true, desc = 'Search what was said in ccd sessions, then open the one chosen' })

for name, spec in pairs(commands) do
  vim.api.nvim_create_user_command(name, function(o)
    require('ccd').run(spec[1], o.fargs[1])
  end, { nargs = '?', complete = complete, desc = spec[2] })
end
