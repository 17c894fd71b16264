"""Audit your Opacus DP-SGD training in a few added lines (dpaudit.dpsgd.opacus.OpacusCanaries).

An ordinary Opacus training loop on scikit-learn's digits (Poisson sampling, clipping, noise from
``PrivacyEngine.make_private``); the three marked lines add 2,000 gradient canaries, observe them at
every step and print the one-run audit next to the accountant's epsilon.

    python examples/opacus_audit.py            # about half a minute on one CPU core
"""

import logging
import warnings

import torch
from opacus import PrivacyEngine

from dpaudit.dpsgd import load_digits_task
from dpaudit.dpsgd.opacus import OpacusCanaries  # (1) the hook

warnings.filterwarnings("ignore")
logging.getLogger("absl").setLevel(logging.ERROR)

x, y = load_digits_task(num_train=500)
data = torch.utils.data.TensorDataset(torch.tensor(x), torch.tensor(y))
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(64, 32), torch.nn.Tanh(), torch.nn.Linear(32, 10))
optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
loader = torch.utils.data.DataLoader(data, batch_size=25)
engine = PrivacyEngine()
model, optimizer, loader = engine.make_private(module=model, optimizer=optimizer, data_loader=loader,
                                               noise_multiplier=1.0, max_grad_norm=1.0, poisson_sampling=True)

canaries = OpacusCanaries(optimizer, canaries=2000, sampling_rate=25 / 500, seed=0)  # (2) attach
for epoch in range(5):
    for xb, yb in loader:
        optimizer.zero_grad()
        torch.nn.functional.cross_entropy(model(xb), yb).backward()
        canaries.step()  # (3) instead of optimizer.step()

print(canaries.audit(delta=1e-5).summary())
print(f"Opacus's own accountant: epsilon = {engine.get_epsilon(1e-5):.4g}")
