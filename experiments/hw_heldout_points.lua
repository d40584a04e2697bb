-- experiments/hw_heldout_points.lua - issue 9's held-out validation points (hw_validate.lua -D set=heldout).
-- None of them is in the calibration fit set (hw_retention/offload/layout/multi_instance: 4-16 x (512 + 128)
-- at t = 0) or in `dkv profile`'s grid as a configuration (the profile times kernels alone; these are whole
-- runs).  Arrivals come from the shipped workload samples (datasets/workloads/, synthetic, 48 requests each)
-- with time_scale compressing them so a run stays within seconds of device time; prompts are clamped to
-- [256, 3072] tokens, generations to whole 32-token blocks.  Dream-7B is the model whose exact shapes the
-- default profile does not contain (`dkv profile` measures LLaDA-8B's; Dream's GEMMs come from its generic grid).
-- Each entry: {name, model, workload, decode, scheduler, policies}.
-- The returned list's field `novel` (hw_validate.lua -D set=novel, runs nv:<point>, since session 34) holds points along
-- the two dimensions every held-out point keeps fixed: the block length (32) and the denoising steps per block (8).
-- Each entry there: {name, model, workload, decode, scheduler, policies, block_len, steps}.  Blocks of 64 put 64 query
-- rows a request in every Reuse step (the profile times Reuse attention at 32 a request), blocks of 16 put 16, and 32
-- steps a block of 32 unmask one token a step (four times the Reuse steps of the held-out set).
local W = "datasets/workloads/"
local function trace(file, n, scale, pmin, pmax, gmax)
  return {file = W .. file, first_n = n, time_scale = scale, prompt_min = pmin or 256, prompt_max = pmax or 3072,
          gen_min = 32, gen_max = gmax or 256}
end
local sparse_head = {retention = {set = "per_head", mode = "fixed", rho = 0.5}}
local sparse_shared = {retention = {set = "shared", mode = "fixed", rho = 0.5}}
local prog = {offload = {mode = "progressive", t1 = 1 / 3, t2 = 2 / 3, lowrank_ratio = 0.3, pinned = true}}
local points = {
  -- LLaDA-8B, 24 Azure-sample requests arriving over ~3 s (x0.25), continuous batching up to 32
  {"az:dual", "llada-8b", trace("azure_sample.csv", 24, 0.25), "dual", 32},
  {"az:prefix", "llada-8b", trace("azure_sample.csv", 24, 0.25), "prefix", 32},
  {"az:sparse_head", "llada-8b", trace("azure_sample.csv", 24, 0.25), "sparse", 32, sparse_head},
  {"az:sparse_shared", "llada-8b", trace("azure_sample.csv", 24, 0.25), "sparse", 32, sparse_shared},
  -- no cache: every step is a Refresh of the whole canvas (short generations keep it affordable)
  {"az:none", "llada-8b", trace("azure_sample.csv", 6, 0.25, 256, 1024, 64), "none", 8},
  -- progressive offload (the issue's worst miss: -45 %), BurstGPT sample
  {"bg:dual+prog", "llada-8b", trace("burstgpt_sample.csv", 12, 0.02, 256, 3072, 128), "dual", 16, prog},
  -- batch 1: one request at a time (the seeds' regime), Vidur sample
  {"vi:dual,b=1", "llada-8b", trace("vidur_sample.csv", 4, 0.1, 256, 3072, 64), "dual", 1},
  -- long prompts (2,048-3,072), Mooncake sample
  {"mc:dual,long", "llada-8b", trace("mooncake_sample.jsonl", 8, 0.001, 2048, 3072, 64), "dual", 8},
  -- Dream-7B (its shapes not in the profile's exact set)
  {"dream:az:dual", "dream-7b", trace("azure_sample.csv", 16, 0.25), "dual", 16},
  {"dream:mc:prefix,long", "dream-7b", trace("mooncake_sample.jsonl", 8, 0.001, 2048, 3072, 64), "prefix", 8},
  {"dream:az:sparse_head", "dream-7b", trace("azure_sample.csv", 16, 0.25), "sparse", 16, sparse_head},
}
points.novel = {
  -- LLaDA-8B, blocks of 64 in 16 steps (four tokens a step, as the held-out set's 32 in 8)
  {"az:dual,blk=64", "llada-8b", trace("azure_sample.csv", 16, 0.25), "dual", 16, nil, 64, 16},
  {"az:sparse_head,blk=64", "llada-8b", trace("azure_sample.csv", 16, 0.25), "sparse", 16, sparse_head, 64, 16},
  -- blocks of 16 in 4 steps
  {"az:prefix,blk=16", "llada-8b", trace("azure_sample.csv", 16, 0.25), "prefix", 16, nil, 16, 4},
  -- one token a step: blocks of 32 in 32 steps, batch 4
  {"vi:dual,steps=32", "llada-8b", trace("vidur_sample.csv", 4, 0.1, 256, 3072, 64), "dual", 4, nil, 32, 32},
  -- Dream-7B, blocks of 64 in 16 steps
  {"dream:az:dual,blk=64", "dream-7b", trace("azure_sample.csv", 16, 0.25), "dual", 16, nil, 64, 16},
}
return points
