"""The design's mode selector ("十维量规执行模式选择器"): M from four signals, then five routing bands.

    M = 0.30·N(domain) + 0.25·N(pii) + 0.20·N(file scale) + 0.15·N(revert history)

An explicit ``quick`` sets M = 0.0 and ``full`` sets M = 1.0, skipping the sum.
M is kept at 4 decimals; routing rounds it half-up to 2 decimals:

    ≥ 0.90          hard full    run Full without pausing
    [0.70, 0.90)    soft full    suggest Full, pause to confirm
    (0.30, 0.70)    manual       show the reasons, the user chooses
    [0.10, 0.30]    soft quick   default Quick, switch offered
    ≤ 0.09          hard quick   run Quick without pausing

Boundaries as the table says: 0.90 is hard, 0.70 soft full, 0.30 soft quick,
0.10 soft quick (only ≤ 0.09 is hard quick). Readings where the table is loose:
the hard-quick band also requires its stated conditions (personal/casual domain,
under 200 lines, no revert) and otherwise stays soft quick; with fewer than 5
records (cold start) the user always chooses.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal

WEIGHTS = {"domain": 0.30, "pii": 0.25, "file_scale": 0.20, "revert_history": 0.15}
COLD_START_RECORDS = 5

_DOMAINS: tuple[tuple[float, str, re.Pattern], ...] = (
    (1.0, "finance/medical/legal/government", re.compile(
        r"\b(financ\w*|bank\w*|payment|invoice|tax|medical|clinic\w*|patient|diagnos\w*|legal|lawyer|contract|"
        r"court|compliance|government)\b|金融|银行|支付|财务|税|医疗|医院|患者|诊断|法律|律师|合同|诉讼|政务|政府", re.I)),
    (0.8, "production deployment", re.compile(
        r"\b(production|deploy\w*|release|rollout|kubernetes|k8s|terraform|database migration)\b|生产环境|部署|上线|发布", re.I)),
    (0.4, "technical design/data analysis", re.compile(
        r"\b(architecture|api|schema|sql|data analysis|analytics|dataset|pipeline|code review|pull request)\b|"
        r"技术方案|架构|数据分析|数据集|接口", re.I)),
    (0.0, "personal creation/chat/entertainment", re.compile(
        r"\b(poem|story|novel|fiction|chat|joke|game|hobby|diary|personal)\b"
        r"|创作|写作|小说|诗|闲聊|娱乐|游戏|日记|文章|公众号|小红书|抖音", re.I)),
)
_UNMATCHED_DOMAIN = 0.2

_PII_STRONG = re.compile(
    r"\b\d{6}(19|20)\d{2}(0[1-9]|1[0-2])(0[1-9]|[12]\d|3[01])\d{3}[\dXx]\b"  # PRC ID card
    r"|\bsk-[A-Za-z0-9_-]{16,}|\bAKIA[0-9A-Z]{16}\b|\bgh[pousr]_[A-Za-z0-9]{30,}"  # API keys
    r"|-----BEGIN [A-Z ]*PRIVATE KEY-----|(api[_-]?key|secret|password|token)\s*[:=]\s*\S{8,}"
    r"|身份证号?\s*[:：]?\s*\d{15,18}|银行卡号?|密钥\s*[:：]", re.I)
_PII_INTERNAL = re.compile(
    r"\b[\w-]+\.(internal|corp|intranet|lan)\b|\b10\.\d{1,3}\.\d{1,3}\.\d{1,3}\b|\b192\.168\.\d{1,3}\.\d{1,3}\b"
    r"|\b172\.(1[6-9]|2\d|3[01])\.\d{1,3}\.\d{1,3}\b|内网|内部\s*API", re.I)
_PII_CONTACT = re.compile(r"\b[\w.+-]+@[\w-]+\.[\w.]+\b|(?<!\d)1[3-9]\d{9}(?!\d)|\+\d{1,3}[ -]?\d{3}[ -]?\d{3,4}[ -]?\d{4}")
_CARD = re.compile(r"(?<!\d)(\d[ -]?){15,18}\d(?!\d)")


def _luhn(digits: str) -> bool:
    total, parity = 0, len(digits) % 2
    for i, ch in enumerate(digits):
        d = int(ch)
        if i % 2 == parity:
            d = d * 2 - 9 if d * 2 > 9 else d * 2
        total += d
    return total % 10 == 0


def normalize_domain(text: str) -> tuple[float, str]:
    hits = [(value, name) for value, name, pattern in _DOMAINS if pattern.search(text)]
    return max(hits) if hits else (_UNMATCHED_DOMAIN, "no domain keyword (neutral default)")


def normalize_pii(text: str) -> tuple[float, str]:
    cards = [m.group(0) for m in _CARD.finditer(text)]
    if _PII_STRONG.search(text) or any(_luhn(re.sub(r"\D", "", c)) for c in cards):
        return 1.0, "ID-card/bank-card number or secret"
    if _PII_INTERNAL.search(text):
        return 0.7, "internal host, path or internal API"
    if _PII_CONTACT.search(text):
        return 0.3, "e-mail or phone number"
    return 0.0, "no PII"


def normalize_file_scale(lines: int, referenced_files: int) -> float:
    if lines > 800 or referenced_files >= 5:
        return 1.0
    if lines > 200:
        return (lines - 200) / 600
    return 0.0


def normalize_reverts(reverts: int) -> float:
    return 1.0 if reverts >= 3 else {2: 0.7, 1: 0.3}.get(reverts, 0.0)


@dataclass(frozen=True)
class Route:
    m: float  # 4 decimals
    rounded: float  # 2 decimals, what the band is read from
    band: str  # hard_full | soft_full | manual | soft_quick | hard_quick | cold_start | explicit
    mode: str | None  # the mode chosen or suggested; None when the user must choose
    pause: bool
    contributions: dict[str, float]
    reasons: tuple[str, ...]


def _q(value: float, places: str) -> float:
    return float(Decimal(repr(value)).quantize(Decimal(places), rounding=ROUND_HALF_UP))


def route(text: str, lines: int, referenced_files: int, reverts: int, records: int,
          explicit: str | None = None, domain_factor: float = 1.0) -> Route:
    """Choose quick or full for one skill; ``domain_factor`` is the mis-routing correction (0.5 per decay)."""
    if explicit in ("quick", "full"):
        m = 0.0 if explicit == "quick" else 1.0
        return Route(m, m, "explicit", explicit, False, {}, (f"--mode {explicit} given: the formula is skipped",))
    domain, domain_why = normalize_domain(text)
    pii, pii_why = normalize_pii(text)
    scale = normalize_file_scale(lines, referenced_files)
    revert = normalize_reverts(reverts)
    contributions = {
        "domain": _q(WEIGHTS["domain"] * domain_factor * domain, "0.0001"),
        "pii": _q(WEIGHTS["pii"] * pii, "0.0001"),
        "file_scale": _q(WEIGHTS["file_scale"] * scale, "0.0001"),
        "revert_history": _q(WEIGHTS["revert_history"] * revert, "0.0001"),
    }
    m = _q(sum(contributions.values()), "0.0001")
    rounded = _q(m, "0.01")
    reasons = (f"domain {domain:g} ({domain_why})" + (f" × {domain_factor:g} correction" if domain_factor != 1 else ""),
               f"PII {pii:g} ({pii_why})", f"file scale {scale:.4g} ({lines} lines, {referenced_files} referenced files)",
               f"revert history {revert:g} ({reverts} revert(s))", f"M = {m:.4f} → {rounded:.2f}")
    if records < COLD_START_RECORDS:
        return Route(m, rounded, "cold_start", None, True, contributions,
                     (*reasons, f"cold start: {records} record(s) < {COLD_START_RECORDS}, choose the mode yourself"))
    if rounded >= 0.90:
        return Route(m, rounded, "hard_full", "full", False, contributions, reasons)
    if rounded >= 0.70:
        return Route(m, rounded, "soft_full", "full", True, contributions, reasons)
    if rounded > 0.30:
        return Route(m, rounded, "manual", None, True, contributions, reasons)
    hard = rounded <= 0.09 and domain == 0.0 and lines < 200 and reverts == 0
    return Route(m, rounded, "hard_quick" if hard else "soft_quick", "quick", False, contributions, reasons)


def record_override(overrides: list[str], suggested: str | None, chosen: str, factor: float) -> tuple[list[str], float]:
    """Mis-routing correction: two manual overrides in a row against the suggestion halve the domain weight."""
    if suggested is None or suggested == chosen:
        return [], factor
    history = [*overrides, f"{suggested}->{chosen}"]
    if len(history) >= 2 and history[-1] == history[-2]:
        return [], factor * 0.5
    return history, factor
