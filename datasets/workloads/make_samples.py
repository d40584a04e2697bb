#!/usr/bin/python3
"""Writes the small synthetic sample traces in this folder, one per format dkv reads.

They are made up (fixed seed), shaped loosely like the public traces (long-tailed prompt
lengths, short generations, bursty arrivals); they are NOT excerpts of any real trace.
Run from anywhere:  /usr/bin/python3 datasets/workloads/make_samples.py
"""
import datetime
import json
import math
import os
import random

HERE = os.path.dirname(os.path.abspath(__file__))
N = 48
rng = random.Random(20240611)


def lognormal(median, mean, lo, hi):
    sigma = math.sqrt(2 * math.log(mean / median))
    return max(lo, min(hi, int(round(median * math.exp(sigma * rng.gauss(0, 1))))))


def arrivals(rate, cv):
    shape, scale = 1 / cv ** 2, cv ** 2 / rate
    t, out = 0.0, []
    for i in range(N):
        if i:
            t += rng.gammavariate(shape, scale)
        out.append(t)
    return out


def azure():
    t0 = datetime.datetime(2023, 11, 16, 18, 17, 3, 979960)
    with open(os.path.join(HERE, 'azure_sample.csv'), 'w') as f:
        f.write('TIMESTAMP,ContextTokens,GeneratedTokens\n')
        for t in arrivals(2.5, 2.0):
            ts = t0 + datetime.timedelta(seconds=t)
            f.write('%s%s,%d,%d\n' % (ts.strftime('%Y-%m-%d %H:%M:%S.'), '%07d' % (ts.microsecond * 10),
                                      lognormal(1500, 2048, 16, 7437), lognormal(13, 28, 1, 1900)))


def mooncake():
    # a few conversations whose turns extend the same prefix: hash_ids share leading blocks
    next_hash, convs = 0, []
    with open(os.path.join(HERE, 'mooncake_sample.jsonl'), 'w') as f:
        for t in arrivals(1.0, 1.5):
            if convs and rng.random() < 0.5:
                c = rng.choice(convs)
                c['len'] += rng.randint(100, 1500)
            else:
                c = {'len': lognormal(4000, 7000, 200, 60000), 'hashes': []}
                convs.append(c)
            need = (c['len'] + 511) // 512
            while len(c['hashes']) < need:
                c['hashes'].append(next_hash)
                next_hash += 1
            rec = {'timestamp': int(round(t * 1000)), 'input_length': c['len'],
                   'output_length': lognormal(200, 350, 1, 2000), 'hash_ids': c['hashes'][:need]}
            f.write(json.dumps(rec) + '\n')


def vidur():
    with open(os.path.join(HERE, 'vidur_sample.csv'), 'w') as f:
        f.write('arrived_at,num_prefill_tokens,num_decode_tokens\n')
        for t in arrivals(4.0, 1.0):
            f.write('%.6f,%d,%d\n' % (t, lognormal(800, 1200, 8, 8192), lognormal(150, 250, 1, 2048)))


def burstgpt():
    with open(os.path.join(HERE, 'burstgpt_sample.csv'), 'w') as f:
        f.write('Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n')
        for t in arrivals(0.2, 3.0):
            p = lognormal(600, 900, 1, 16000)
            g = 0 if rng.random() < 0.05 else lognormal(250, 350, 1, 4000)  # failed requests: 0
            model = 'GPT-4' if rng.random() < 0.2 else 'ChatGPT'
            log = 'API log' if rng.random() < 0.4 else 'Conversation log'
            f.write('%d,%s,%d,%d,%d,%s\n' % (int(t), model, p, g, p + g, log))


def lengths():
    with open(os.path.join(HERE, 'gen_lengths_sample.txt'), 'w') as f:
        f.write('# synthetic generation lengths, one per line (for an empirical distribution)\n')
        for _ in range(N):
            f.write('%d\n' % lognormal(64, 96, 1, 1024))


azure()
mooncake()
vidur()
burstgpt()
lengths()
