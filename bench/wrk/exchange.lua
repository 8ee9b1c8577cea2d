-- wrk script: POST /v1/exchange on many independent chains. Each chain has at most one
-- exchange in flight: a chain goes back to the queue when its response (which names
-- chain_id and the new token) arrives. A non-200 answer retires the chain and is counted.
-- Usage: wrk -s bench/wrk/exchange.lua URL -- TOKENS_FILE   (lines: "<chain id> <token>")
local tokens, queue = {}, {}
local first, last = 1, 0
local failures = 0

function init(args)
  for line in io.lines(args[1]) do
    local chain, token = line:match("^(%x+) (%S+)$")
    tokens[chain] = token
    last = last + 1
    queue[last] = chain
  end
end

function request()
  local chain = queue[first]
  queue[first] = nil
  first = first + 1
  return wrk.format("POST", "/v1/exchange", { ["Authorization"] = "Bearer " .. tokens[chain] })
end

function response(status, headers, body)
  if status ~= 200 then
    failures = failures + 1
    return
  end
  local chain = body:match('"chain_id":"(%x+)"')
  tokens[chain] = body:match('"token":"([^"]+)"')
  last = last + 1
  queue[last] = chain
end

function done(summary, latency, requests)
  io.write(string.format("exchange failures: %d\n", failures))
end
