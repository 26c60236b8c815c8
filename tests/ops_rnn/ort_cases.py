# RNN / GRU / LSTM cases with ONNX Runtime's outputs, written in the node-test layout into the folder
# given as argv[1], for aotc-conformance --data: an independent reference for what the ONNX node
# tests leave out (bidirectional, reverse, clip, activations with alpha/beta, input_forget,
# peepholes, random sequence_lens including 0). ORT has no layout=1 RNNs (node tests cover it).
import os, sys, numpy as np, onnx, onnxruntime as ort
from onnx import helper, TensorProto, numpy_helper
os.chdir(sys.argv[1])
rng = np.random.default_rng(0)
def case(name, op, S, B, I, H, D, attrs, ins=('B','seq','h0','c0','P'), outs=('Y','Y_h','Y_c'), layout=0):
    G = {'RNN':1,'GRU':3,'LSTM':4}[op]
    x = rng.uniform(-1,1,(B,S,I) if layout else (S,B,I)).astype(np.float32)
    feeds = {'X': x, 'W': rng.uniform(-1,1,(D,G*H,I)).astype(np.float32), 'R': rng.uniform(-1,1,(D,G*H,H)).astype(np.float32)}
    names = ['X','W','R']
    full = ['B','seq','h0','c0','P'] if op=='LSTM' else ['B','seq','h0']
    for n in full:
        if n in ins:
            st = (B,D,H) if layout else (D,B,H)
            feeds[n] = {'B': rng.uniform(-1,1,(D,2*G*H)).astype(np.float32), 'seq': rng.integers(0,S+1,(B,)).astype(np.int32),
                        'h0': rng.uniform(-1,1,st).astype(np.float32), 'c0': rng.uniform(-1,1,st).astype(np.float32),
                        'P': rng.uniform(-1,1,(D,3*H)).astype(np.float32)}[n]
            names.append(n)
        else: names.append('')
    while names[-1]=='': names.pop()
    onames = [o if o in outs else '' for o in (['Y','Y_h','Y_c'] if op=='LSTM' else ['Y','Y_h'])]
    while onames[-1]=='': onames.pop()
    node = helper.make_node(op, names, onames, hidden_size=H, layout=layout, **attrs)
    vi = lambda n,a: helper.make_tensor_value_info(n, TensorProto.INT32 if a.dtype==np.int32 else TensorProto.FLOAT, a.shape)
    g = helper.make_graph([node], name, [vi(n, feeds[n]) for n in names if n], [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in onames if o])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid('',14)], ir_version=8)
    sess = ort.InferenceSession(m.SerializeToString(), providers=['CPUExecutionProvider'])
    res = sess.run(None, {n: feeds[n] for n in names if n})
    d = f'test_ort_{name}'; os.makedirs(d+'/test_data_set_0', exist_ok=True)
    # give the outputs their shapes so the model is self-describing
    m.graph.ClearField('output'); m.graph.output.extend([helper.make_tensor_value_info(o, TensorProto.FLOAT, r.shape) for o, r in zip([o for o in onames if o], res)])
    onnx.save(m, d+'/model.onnx')
    for k,n in enumerate([n for n in names if n]): open(f'{d}/test_data_set_0/input_{k}.pb','wb').write(numpy_helper.from_array(feeds[n], n).SerializeToString())
    for k,r in enumerate(res): open(f'{d}/test_data_set_0/output_{k}.pb','wb').write(numpy_helper.from_array(r).SerializeToString())
bi = 'bidirectional'
case('rnn_bidir_seq_clip', 'RNN', 5, 3, 2, 4, 2, dict(direction=bi, clip=0.7))
case('rnn_reverse_acts', 'RNN', 4, 2, 3, 5, 1, dict(direction='reverse', activations=['LeakyRelu'], activation_alpha=[0.3]))
case('rnn_bidir_affine', 'RNN', 3, 2, 3, 3, 2, dict(direction=bi, activations=['Affine','HardSigmoid'], activation_alpha=[0.5, 0.3], activation_beta=[0.1, 0.6]))
case('gru_bidir_lbr', 'GRU', 4, 3, 2, 5, 2, dict(direction=bi, linear_before_reset=1))
case('gru_reverse_seq', 'GRU', 5, 3, 3, 4, 1, dict(direction='reverse'))
case('gru_clip_acts', 'GRU', 3, 2, 2, 3, 1, dict(clip=0.5, activations=['Sigmoid','Elu'], activation_alpha=[0.7]))
case('lstm_bidir_peep_seq', 'LSTM', 5, 3, 2, 4, 2, dict(direction=bi))
case('lstm_input_forget_clip', 'LSTM', 4, 2, 3, 3, 1, dict(input_forget=1, clip=0.8))
case('lstm_reverse', 'LSTM', 4, 3, 2, 3, 1, dict(direction='reverse'))
case('lstm_acts', 'LSTM', 3, 2, 2, 3, 1, dict(activations=['HardSigmoid','Softsign','ScaledTanh'], activation_alpha=[0.25, 1.5], activation_beta=[0.4, 0.8]))
